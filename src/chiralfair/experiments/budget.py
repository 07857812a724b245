"""The largest search budget a run accepts; read by one run and by grid files (this module imports nothing)."""

# Largest max_global x (max_local + 1) accepted by a run. Pairs are streamed to disk when a run folder is given,
# but the recorder keeps every tested key and every IDI key (8 bytes each, plus merge space) for the counting
# rule. Measured at the cap (census / sex / dnn / eidig-inf, 99,999 x 999): 12.0 M tested keys, 10.5 M IDIs,
# peak memory 995-1027 MiB in two runs (benchmarks/results/whole_command.md); a larger budget passes 1 GB.
MAX_BUDGET = 10**8


def budget_error(max_global: int, max_local: int) -> str | None:
    """Why a budget is refused (its product is over :data:`MAX_BUDGET`), or None if it is accepted."""
    size = max_global * (max_local + 1)
    if size <= MAX_BUDGET:
        return None
    return (f"max_global x (max_local + 1) = {size:,} exceeds {MAX_BUDGET:,}: a run keeps the key of every input "
            "it tests in memory (about 1 GB at that bound); split it into several runs")
