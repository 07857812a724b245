"""chiralfair: individual fairness testing of tabular classifiers.

Finds individual discriminatory instances (IDIs) with I&D seed selection and the generators AEQUITAS, SG,
ADF and EIDIG.
"""

__version__ = "0.1.0"
