"""One-hot protected columns as one group (case 6), and missing protected values (case 8).

Run by hand:  python benchmarks/groups_and_missing.py

Case 6 (census, decoded, race one-hot encoded by ``pd.get_dummies``, LogisticRegression fitted on the codes):
the discrimination check on 2,000 random seeds and AEQUITAS (random seeds, 100/100), before (the race columns
as separate protected attributes) and after (one group): queries per checked input and the share of IDIs (and
of their counterparts) that are impossible rows (not exactly one race column set).

Case 8 (a Titanic-like frame built from census rows: age as a number with 20% of it missing, missing more often
among low earners, so that a model can learn "age missing"; a decision tree fitted on the codes; protected
age in 5 bins): share of IDIs whose own or counterpart age is "missing", ``missing_protected="value"`` (before)
vs the default ``"exclude"`` (after), over every data row and for AEQUITAS with random seeds. After, a data row
whose own age is missing is still checked (against the five age bins) and reported apart
(``Dataset.missing_protected``); no counterpart is ever "age missing".

Prints one JSON object; writes nothing.
"""

from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.datasets import from_frame, load_dataset
from chiralfair.exceptions import DataWarning
from chiralfair.generators import make_generator
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck


def census_frame() -> pd.DataFrame:
    ds = load_dataset("census")
    df = ds.domain.decode(ds.X)
    for c in df.columns:
        if isinstance(df[c].dtype, pd.StringDtype):
            df[c] = df[c].astype(object)
    df["income"] = ds.y
    return df


def impossible(rows: np.ndarray) -> np.ndarray:
    return rows.sum(axis=1) != 1


def case6(df: pd.DataFrame) -> dict:
    dummies = pd.get_dummies(df["race"], prefix="race", dtype=int)
    frame = pd.concat([df.drop(columns="race"), dummies], axis=1)
    race = tuple(dummies.columns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        separate = from_frame(frame, label="income", positive_class=1, protected=list(race))
    group = from_frame(frame, label="income", positive_class=1, protected=[race])
    cols = [group.domain.index(c) for c in race]
    est = LogisticRegression(max_iter=2000).fit(separate.X, separate.y)
    out = {"race_columns": list(race), "warning": [str(w.message) for w in caught if w.category is DataWarning]}
    for label, ds in (("before_separate_columns", separate), ("after_one_group", group)):
        model = as_model(est, name="lr")
        seeds = ds.domain.sample(2000, np.random.default_rng(0))
        res = DiscriminationCheck(model, ds.domain).check(seeds)
        idi = res.is_idi
        row = {"n_combinations": len(ds.domain.combinations), "queries_per_check": model.n_queries / len(seeds),
               "check_random_seeds": {"n_idis": int(idi.sum()),
                                      "share_impossible_idis": float(impossible(seeds[idi][:, cols]).mean()),
                                      "share_impossible_counterparts":
                                          float(impossible(res.counterparts(ds.domain)[idi][:, cols]).mean())}}
        model = as_model(est, name="lr")
        t0 = time.perf_counter()
        r = make_generator("aequitas", max_global=100, max_local=100).run(
            model, ds.domain, ds.domain.sample(100, np.random.default_rng(1)), random_state=0)
        row["aequitas_random_100_100"] = {
            "n_idis": r.n_idis, "n_queries": r.n_queries, "n_tested": r.n_tested,
            "queries_per_tested": r.n_queries / max(r.n_tested, 1),
            "share_impossible_idis": float(impossible(r.idis[:, cols]).mean()) if r.n_idis else None,
            "share_impossible_counterparts": float(impossible(r.counterparts[:, cols]).mean()) if r.n_idis else None,
            "seconds": time.perf_counter() - t0}
        out[label] = row
    return out


def titanic_like(df: pd.DataFrame, n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = df.sample(n, random_state=0).reset_index(drop=True)
    age = rng.uniform(17, 90, n)
    # 20% missing overall, twice as often among low earners: "age missing" carries signal a model can use.
    p_missing = np.where(rows["income"] == 0, 0.24, 0.08)
    age[rng.random(n) < p_missing * (0.2 / np.mean(p_missing))] = np.nan
    return pd.DataFrame({"age": age, "sex": rows["sex"], "education": rows["education"],
                         "hours_per_week": rows["hours_per_week"].astype(int), "income": rows["income"]})


def case8(df: pd.DataFrame) -> dict:
    frame = titanic_like(df)
    out = {"rows": len(frame), "share_age_missing": float(frame["age"].isna().mean())}
    bins = {"age": [17, 30, 45, 60, 75, 90]}
    base = from_frame(frame, label="income", positive_class=1, protected=["age"], bins=bins,
                      missing_protected="value")
    est = DecisionTreeClassifier(min_samples_leaf=5, random_state=0).fit(base.X, base.y)
    for label, policy in (("before_value", "value"), ("after_exclude", "exclude")):
        ds = from_frame(frame, label="income", positive_class=1, protected=["age"], bins=bins,
                        missing_protected=policy)
        code = ds.domain.features[0].missing
        model = as_model(est, name="dtc")
        res = DiscriminationCheck(model, ds.domain).check(ds.X)
        idi = res.is_idi
        cps = res.counterparts(ds.domain)[idi]
        involve = (ds.X[idi, 0] == code) | (cps[:, 0] == code)
        row = {"age_values": list(ds.domain.protected_values[0]), "n_missing_protected": ds.n_missing_protected,
               "queries_per_row": model.n_queries / ds.n_samples,
               "data_rows": {"n_idis": int(idi.sum()), "share_involving_missing": float(involve.mean()),
                             "share_own_missing": float((ds.X[idi, 0] == code).mean()),
                             "share_counterpart_missing": float((cps[:, 0] == code).mean())}}
        r = make_generator("aequitas", max_global=100, max_local=100).run(
            as_model(est, name="dtc"), ds.domain, ds.domain.sample(100, np.random.default_rng(1)), random_state=0)
        inv = (r.idis[:, 0] == code) | (r.counterparts[:, 0] == code)
        row["aequitas_random_100_100"] = {"n_idis": r.n_idis,
                                          "share_involving_missing": float(inv.mean()) if r.n_idis else None}
        out[label] = row
    return out


def main():
    df = census_frame()
    print(json.dumps({"loadavg": os.getloadavg(), "case6": case6(df), "case8": case8(df)}, indent=1))


if __name__ == "__main__":
    main()
