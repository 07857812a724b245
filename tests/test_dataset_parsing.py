"""Truncated, edited and re-formatted raw files: errors name the file, the line and the column."""

import logging

import pandas as pd
import pytest
import realdata

from chiralfair.datasets import load_dataset
from chiralfair.exceptions import ChecksumError, DatasetError

pytestmark = pytest.mark.usefixtures("offline")


@pytest.fixture(scope="module")
def real_home():
    return realdata.real_data_home_or_skip()


def _copy(real_home, tmp_path, relpath, edit, *, keep_lines=None):
    """Write a copy of a raw file under tmp_path (same layout), with ``edit(lines)`` applied."""
    source = real_home / relpath
    newline = "\r\n" if relpath.startswith("compas") else "\n"
    lines = source.read_bytes().decode("utf-8").split(newline)
    if keep_lines is not None:
        lines = lines[:keep_lines]
    lines = edit(lines)
    target = tmp_path / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(newline.join(lines) + newline, newline="")
    return target


def test_truncated_census_names_line_and_mentions_checksum(real_home, tmp_path):
    def cut_last_line(lines):
        lines[-1] = lines[-1][:20]
        return lines

    _copy(real_home, tmp_path, "census/raw/adult.data", cut_last_line, keep_lines=100)
    with pytest.raises(DatasetError) as err:
        load_dataset("census", data_home=tmp_path)
    message = str(err.value)
    assert "census/raw/adult.data" in message and "line 100: expected 15 fields" in message
    assert "found 3" in message and "truncated" in message
    published = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
    assert "SHA-256" in message and published in message


def test_valid_subset_is_a_checksum_error_unless_allowed(real_home, tmp_path, caplog):
    _copy(real_home, tmp_path, "census/raw/adult.data", lambda lines: lines, keep_lines=200)
    with pytest.raises(ChecksumError) as err:
        load_dataset("census", data_home=tmp_path)
    assert "allow_checksum_mismatch=True" in str(err.value) and "5b00264637" in str(err.value)
    with caplog.at_level(logging.WARNING):
        ds = load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)
    assert ds.X.shape == (200, 13)
    assert "allow_checksum_mismatch=True" in caplog.text and "census/raw/adult.data" in caplog.text


def test_census_reformatted_with_semicolons(real_home, tmp_path):
    _copy(real_home, tmp_path, "census/raw/adult.data",
          lambda lines: [line.replace(", ", ";") for line in lines], keep_lines=10)
    with pytest.raises(DatasetError, match=r"line 1: expected 15 fields as in the format, found 1"):
        load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)


def test_census_header_line_is_a_non_integer(real_home, tmp_path):
    header = "age, workclass, fnlwgt, education, education-num, marital-status, occupation, relationship, " \
             "race, sex, capital-gain, capital-loss, hours-per-week, native-country, income"
    _copy(real_home, tmp_path, "census/raw/adult.data", lambda lines: [header, *lines], keep_lines=10)
    with pytest.raises(DatasetError, match=r"line 1, column 'age': 'age' is not an integer"):
        load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)


def test_census_non_integer_and_unknown_category(real_home, tmp_path):
    def edit(lines):
        fields = lines[4].split(", ")
        fields[10] = "12.5"  # capital-gain on line 5
        lines[4] = ", ".join(fields)
        return lines

    _copy(real_home, tmp_path, "census/raw/adult.data", edit, keep_lines=10)
    with pytest.raises(DatasetError, match=r"line 5, column 'capital-gain': '12.5' is not an integer"):
        load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)

    def martian(lines):
        lines[6] = lines[6].replace(", White, ", ", Martian, ").replace(", Black, ", ", Martian, ")
        return lines

    _copy(real_home, tmp_path, "census/raw/adult.data", martian, keep_lines=10)
    with pytest.raises(DatasetError, match=r"line 7, column 'race': unknown value 'Martian'; expected one of "
                                           r"White, Asian-Pac-Islander"):
        load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)


def test_census_missing_value_is_its_own_category(real_home, tmp_path):
    def edit(lines):
        fields = lines[0].split(", ")
        fields[1] = "?"
        lines[0] = ", ".join(fields)
        return lines

    _copy(real_home, tmp_path, "census/raw/adult.data", edit, keep_lines=30)
    ds = load_dataset("census", data_home=tmp_path, allow_checksum_mismatch=True)
    j = ds.domain.index("workclass")
    assert ds.X[0, j] == 8 and ds.domain.features[j].hi == 8 and ds.domain.features[j].label(8) == "?"


def test_bank_header_without_a_column(real_home, tmp_path):
    _copy(real_home, tmp_path, "bank/raw/bank-full.csv",
          lambda lines: [lines[0].replace('"balance"', '"saldo"'), *lines[1:]], keep_lines=20)
    with pytest.raises(DatasetError, match=r"bank/raw/bank-full.csv.*line 1: column 'balance' is missing"):
        load_dataset("bank", data_home=tmp_path, allow_checksum_mismatch=True)


def test_bank_unknown_month_and_wrong_field_count(real_home, tmp_path):
    _copy(real_home, tmp_path, "bank/raw/bank-full.csv",
          lambda lines: [*lines[:3], lines[3].replace('"may"', '"mai"'), *lines[4:]], keep_lines=20)
    with pytest.raises(DatasetError, match=r"line 4, column 'month': unknown value 'mai'"):
        load_dataset("bank", data_home=tmp_path, allow_checksum_mismatch=True)
    _copy(real_home, tmp_path, "bank/raw/bank-full.csv",
          lambda lines: [*lines[:8], lines[8] + ';"extra"', *lines[9:]], keep_lines=20)
    with pytest.raises(DatasetError, match=r"line 9: expected 17 fields as in the header, found 18"):
        load_dataset("bank", data_home=tmp_path, allow_checksum_mismatch=True)


def test_compas_non_integer_priors(real_home, tmp_path):
    def edit(lines):
        fields = lines[2].split(",")
        fields[14] = "many"  # priors_count on line 3
        lines[2] = ",".join(fields)
        return lines

    _copy(real_home, tmp_path, "compas/raw/compas-scores.csv", edit, keep_lines=40)
    with pytest.raises(DatasetError, match=r"line 3, column 'priors_count': 'many' is not an integer"):
        load_dataset("compas", data_home=tmp_path, allow_checksum_mismatch=True)


def test_compas_subset_drops_rows_without_screening_days(real_home, tmp_path):
    _copy(real_home, tmp_path, "compas/raw/compas-scores.csv", lambda lines: lines, keep_lines=301)
    ds = load_dataset("compas", data_home=tmp_path, allow_checksum_mismatch=True)

    raw = pd.read_csv(tmp_path / "compas/raw/compas-scores.csv")
    assert ds.X.shape == (int(raw["days_b_screening_arrest"].notna().sum()), 14) and ds.X.shape[0] < 300


def test_german_unknown_code(real_home, tmp_path):
    _copy(real_home, tmp_path, "german/raw/german.data",
          lambda lines: [*lines[:2], lines[2].replace(" A46 ", " A99 "), *lines[3:]], keep_lines=10)
    with pytest.raises(DatasetError, match=r"german/raw/german.data.*line 3, column 'purpose': unknown value "
                                           r"'A99'; expected one of A40, A41"):
        load_dataset("german", data_home=tmp_path, allow_checksum_mismatch=True)


def test_empty_file(tmp_path):
    (tmp_path / "german" / "raw").mkdir(parents=True)
    (tmp_path / "german" / "raw" / "german.data").write_text("\n\n")
    with pytest.raises(DatasetError, match="german/raw/german.data.*no data rows"):
        load_dataset("german", data_home=tmp_path, allow_checksum_mismatch=True)


def test_binary_file(tmp_path):
    (tmp_path / "bank" / "raw").mkdir(parents=True)
    (tmp_path / "bank" / "raw" / "bank-full.csv").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DatasetError, match="bank/raw/bank-full.csv.*not a UTF-8 text file"):
        load_dataset("bank", data_home=tmp_path)


def test_line_numbers_after_a_quoted_line_break(real_home, tmp_path):
    def edit(lines):
        lines[1] = lines[1].replace("Aggravated Assault w/Firearm", '"Aggravated\r\nAssault"')
        fields = lines[5].split(",")
        fields[7] = "old"  # age of the 5th data row, which starts on line 7 because row 1 spans two lines
        lines[5] = ",".join(fields)
        return lines

    _copy(real_home, tmp_path, "compas/raw/compas-scores.csv", edit, keep_lines=20)
    with pytest.raises(DatasetError, match=r"line 7, column 'age': 'old' is not an integer"):
        load_dataset("compas", data_home=tmp_path, allow_checksum_mismatch=True)
