"""Facts about the published raw files of the benchmark datasets, known without parsing them.

Names, attributes and protected attributes let the command line refuse a bad flag before anything heavy is
imported; the rest lets ``chiralfair datasets`` (:mod:`chiralfair.datasets.describe`) describe a raw file whose
SHA-256 is the published one without parsing it, or even importing the parsers. This module imports only the
exceptions; ``tests/test_datasets.py`` checks every fact against the dataset specs and the parsed files.
"""

from ..exceptions import DomainError

PUBLISHED: dict[str, dict] = {
    "census": {
        "raw": "census/raw/adult.data", "label": "income", "positive_class": ">50K",
        "description": "UCI Adult (adult.data), ADF/AEQUITAS encoding; missing '?' is its own category",
        "rows": 32561, "positive_rows": 7841,
        "attributes": (
            "age", "workclass", "fnlwgt", "education", "marital_status", "occupation", "relationship", "race", "sex",
            "capital_gain", "capital_loss", "hours_per_week", "native_country",
        ),
        "protected": {
            "age": {
                1: "10-19", 2: "20-29", 3: "30-39", 4: "40-49", 5: "50-59", 6: "60-69", 7: "70-79", 8: "80-89",
                9: "90-99",
            },
            "race": {0: "White", 1: "Asian-Pac-Islander", 2: "Amer-Indian-Eskimo", 3: "Other", 4: "Black"},
            "sex": {0: "Female", 1: "Male"},
        },
        # The dataset's default couplings (DatasetSpec.couple, architecture: counterparts that could exist).
        "couple": {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}},
    },
    "compas": {
        "raw": "compas/raw/compas-scores.csv", "label": "decile_score", "positive_class": "> 5",
        "description": "ProPublica compas-scores.csv, I&D selection (10,577 rows with days_b_screening_arrest)",
        "rows": 10577, "positive_rows": 3724,
        "attributes": (
            "sex", "age", "race", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
            "days_b_screening_arrest", "c_days_from_compas", "c_charge_degree", "is_recid", "r_charge_degree",
            "is_violent_recid", "v_decile_score",
        ),
        "protected": {
            "sex": {0: "Male", 1: "Female"},
            "age": {
                1: "10-19", 2: "20-29", 3: "30-39", 4: "40-49", 5: "50-59", 6: "60-69", 7: "70-79", 8: "80-89",
                9: "90-99",
            },
            "race": {
                0: "Hispanic", 1: "African-American", 2: "Caucasian", 3: "Asian", 4: "Other", 5: "Native American",
            },
        },
    },
    "bank": {
        "raw": "bank/raw/bank-full.csv", "label": "y", "positive_class": "yes",
        "description": "UCI Bank Marketing (bank-full.csv), ADF encoding",
        "rows": 45211, "positive_rows": 5289,
        "attributes": (
            "age", "job", "marital", "education", "default", "balance", "housing", "loan", "contact", "day", "month",
            "duration", "campaign", "pdays", "previous", "poutcome",
        ),
        "protected": {
            "age": {
                1: "10-19", 2: "20-29", 3: "30-39", 4: "40-49", 5: "50-59", 6: "60-69", 7: "70-79", 8: "80-89",
                9: ">=90",
            },
        },
    },
    "german": {
        "raw": "german/raw/german.data", "label": "class", "positive_class": "1 (good credit)",
        "description": "UCI Statlog German Credit (german.data), ADF encoding, all 1,000 rows",
        "rows": 1000, "positive_rows": 700,
        "attributes": (
            "checking_status", "duration", "credit_history", "purpose", "credit_amount", "savings_status",
            "employment", "installment_commitment", "sex", "other_parties", "residence", "property_magnitude", "age",
            "other_payment_plans", "housing", "existing_credits", "job", "num_dependents", "own_telephone",
            "foreign_worker",
        ),
        "protected": {
            "sex": {0: "male", 1: "female"},
            "age": {1: "10-19", 2: "20-29", 3: "30-39", 4: "40-49", 5: "50-59", 6: "60-69", 7: "70-79"},
        },
    },
}


def dataset_attributes(name: str) -> tuple[str, ...] | None:
    """Encoded feature names of benchmark dataset ``name`` in column order, or None if ``name`` is unknown.

    Parameters
    ----------
    name : str
        A benchmark dataset name.

    Returns
    -------
    tuple of str or None
    """
    facts = PUBLISHED.get(name)
    return None if facts is None else facts["attributes"]


def unknown_protected_error(name: str, attribute: str | tuple) -> DomainError:
    """The error for a protected attribute ``attribute`` that is not a feature of benchmark dataset ``name``.

    Parameters
    ----------
    name : str
        The benchmark dataset.
    attribute : str or tuple of str
        The protected attribute asked for (a tuple: columns joined by '+' on the command line).

    Returns
    -------
    DomainError
        Its message lists the dataset's attributes.
    """
    facts = PUBLISHED[name]
    if isinstance(attribute, tuple | list):  # '+'-joined columns: the benchmarks have no one-hot attribute
        return DomainError(
            f"protected attribute {'+'.join(map(str, attribute))!r} joins columns of {name} into one attribute, but "
            f"{name} has no attribute over several columns: give its attributes separated by ',' (e.g. "
            f"{','.join(map(str, attribute))}); its protected attributes are {', '.join(facts['protected'])}")
    return DomainError(
        f"unknown protected attribute {attribute!r} for {name}; its protected attributes are "
        f"{', '.join(facts['protected'])} (any of its features may be tested as one: {', '.join(facts['attributes'])})")
