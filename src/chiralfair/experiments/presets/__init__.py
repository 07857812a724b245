"""The I&D paper's experiments as shipped grids: run one, and get its tables beside the paper's numbers.

Each preset is a grid file ``<name>.toml`` in this folder, with the paper's published numbers in
``paper/<name>.toml``. :func:`reproduce` runs it (resuming), then writes the tables, claims and plots
(:mod:`.paper_tables`); :mod:`.axes` names the seed strategies and figures for both.
"""

from .reproduction import (
    PRESET_DIR,
    Reproduction,
    check_preset_name,
    paper_numbers,
    preset_grid,
    preset_names,
    quick_grid,
    reproduce,
    with_retrain_details,
    write_reproduction,
)

__all__ = ["PRESET_DIR", "Reproduction", "check_preset_name", "paper_numbers", "preset_grid", "preset_names",
           "quick_grid", "reproduce", "with_retrain_details", "write_reproduction"]
