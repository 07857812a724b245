"""The quick start imports what it uses: no sympy (torch's symbolic shapes) to build a DNN, no statsmodels for an
interval; the intervals computed without statsmodels equal statsmodels' bit for bit."""

import subprocess
import sys

import numpy as np
import pytest

from chiralfair.verdict.result import binomial_interval, proportion_confint


@pytest.mark.parametrize("method", ["beta", "wilson"])
def test_the_intervals_equal_statsmodels_bit_for_bit(method):
    from statsmodels.stats.proportion import proportion_confint as reference

    rng = np.random.default_rng(0)
    cases = [(0, 1), (1, 1), (0, 30), (30, 30), (7, 13), (1535, 13024), (5, 10**8)]
    cases += [(int(k), int(n)) for n in rng.integers(1, 10**6, 40) for k in rng.integers(0, n + 1, 2)]
    for count, nobs in cases:
        for alpha in (0.05, 0.01, 1 - 0.9999, 0.61 * 0.05):
            assert proportion_confint(count, nobs, alpha, method) == reference(count, nobs, alpha=alpha,
                                                                               method=method), (count, nobs, alpha)
    counts = np.array([0, 3, 10, 40], dtype=float)
    nobs = np.array([1, 10, 10, 200], dtype=float)
    got, want = proportion_confint(counts, nobs, 0.05, method), reference(counts, nobs, alpha=0.05, method=method)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_binomial_interval_keeps_its_ends():
    assert binomial_interval(0, 50, 0.95) == (0.0, proportion_confint(0, 50, 1 - 0.95, "beta")[1])
    assert binomial_interval(50, 50, 0.95)[1] == 1.0


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_building_the_dnn_imports_no_sympy_and_draws_nothing_from_torchs_generator():
    pytest.importorskip("torch")
    code = ("import sys, torch\n"
            "from chiralfair.models.dnn import PaperDNN\n"
            "torch.manual_seed(5); before = torch.get_rng_state().clone()\n"
            "a = PaperDNN(13); b = PaperDNN(13)\n"
            "same = all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))\n"
            "print('sympy' in sys.modules, torch.equal(before, torch.get_rng_state()), same)")
    assert run(code) == "False True True"


def test_a_verdict_imports_no_statsmodels():
    code = ("import sys, numpy as np, pandas as pd\n"
            "from sklearn.linear_model import LogisticRegression\n"
            "from chiralfair.datasets import from_frame\n"
            "from chiralfair.verdict import estimate\n"
            "rng = np.random.default_rng(0)\n"
            "p = pd.DataFrame({'sex': rng.choice(['f', 'm'], 300), 'hours': rng.integers(20, 60, 300)})\n"
            "p['y'] = np.where(p['hours'] + 10 * (p['sex'] == 'm') > 45, 'yes', 'no')\n"
            "d = from_frame(p, label='y', positive_class='yes', protected='sex')\n"
            "v = estimate(LogisticRegression().fit(d.X, d.y), d, favourable=1)\n"
            "print('statsmodels' in sys.modules, v.people_lower < v.share < v.people_upper)")
    assert run(code) == "False True"
