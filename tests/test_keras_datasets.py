"""xlapy.keras.datasets: local files only, clear errors when they are missing."""
from __future__ import annotations

import pickle
import sys
import tarfile

import numpy as np
import pytest

from xlapy.errors import InvalidArgumentError
from xlapy.keras.datasets import cifar10, digits, mnist


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    return tmp_path / "kh" / "datasets"


def test_mnist_missing_file_says_where_to_put_it(keras_home):
    with pytest.raises(InvalidArgumentError) as e:
        mnist.load_data()
    msg = str(e.value)
    assert str(keras_home / "mnist.npz") in msg and "mnist.npz" in msg and "download" in msg


def test_mnist_reads_keras_npz(keras_home):
    keras_home.mkdir(parents=True)
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 255, (6, 28, 28), dtype=np.uint8),
              "y_train": np.arange(6, dtype=np.uint8),
              "x_test": rng.integers(0, 255, (2, 28, 28), dtype=np.uint8),
              "y_test": np.array([3, 4], np.uint8)}
    np.savez(keras_home / "mnist.npz", **arrays)
    (x, y), (xt, yt) = mnist.load_data()
    np.testing.assert_array_equal(x, arrays["x_train"])
    np.testing.assert_array_equal(yt, arrays["y_test"])
    (x2, _), _ = mnist.load_data(path=str(keras_home))          # a directory works too
    np.testing.assert_array_equal(x2, x)
    np.savez(keras_home / "bad.npz", a=np.zeros(2))
    with pytest.raises(InvalidArgumentError, match="not Keras's mnist.npz"):
        mnist.load_data(path=str(keras_home / "bad.npz"))


def _cifar_batch(rng, n, offset):
    data = rng.integers(0, 255, (n, 3072), dtype=np.uint8)
    return {b"data": data, b"labels": [(offset + i) % 10 for i in range(n)]}, data


def _write_cifar(root, rng, n=3):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    raw = []
    for i, name in enumerate(cifar10.BATCHES):
        batch, data = _cifar_batch(rng, n, i)
        raw.append(data)
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)
    return folder, raw


def test_cifar10_reads_the_python_pickles(keras_home):
    folder, raw = _write_cifar(keras_home, np.random.default_rng(1))
    (x, y), (xt, yt) = cifar10.load_data()
    assert x.shape == (15, 32, 32, 3) and xt.shape == (3, 32, 32, 3)
    assert y.shape == (15, 1) and y.dtype == np.uint8
    # channels last: pixel (r, c) channel k is data[k*1024 + r*32 + c]
    assert x[0, 1, 2, 2] == raw[0][0, 2 * 1024 + 1 * 32 + 2]
    np.testing.assert_array_equal(yt[:, 0], [5, 6, 7])
    (x2, _), _ = cifar10.load_data(path=str(folder))
    np.testing.assert_array_equal(x2, x)


def test_cifar10_reads_the_unextracted_archive(tmp_path):
    folder, _ = _write_cifar(tmp_path / "src", np.random.default_rng(2), n=2)
    archive = tmp_path / "dl" / cifar10.ARCHIVE
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    (x, y), (xt, yt) = cifar10.load_data(path=str(archive.parent))
    assert x.shape == (10, 32, 32, 3) and yt.shape == (2, 1)


def test_cifar10_missing_says_where_to_put_it(keras_home):
    with pytest.raises(InvalidArgumentError) as e:
        cifar10.load_data()
    assert "cifar-10-batches-py" in str(e.value) and "cifar-10-python.tar.gz" in str(e.value)


@pytest.mark.skipif(digits._locate() is None, reason="scikit-learn is not installed")
def test_digits_from_scikit_learn_data_without_importing_it():
    sys.modules.pop("sklearn", None)
    (x, y), (xt, yt) = digits.load_data(test_split=0.2, seed=1)
    assert "sklearn" not in sys.modules
    assert x.shape == (1438, 8, 8) and xt.shape == (359, 8, 8)
    assert x.dtype == np.uint8 and x.max() == 16 and set(np.unique(y)) == set(range(10))
    (x2, _), _ = digits.load_data(test_split=0.2, seed=1)
    np.testing.assert_array_equal(x, x2)
    (x3, _), _ = digits.load_data(test_split=0.2, seed=2)
    assert not np.array_equal(x, x3)


def test_digits_reads_a_given_csv_and_reports_a_missing_one(tmp_path):
    rows = np.hstack([np.arange(128).reshape(2, 64) % 17, [[3], [7]]])
    path = tmp_path / "d.csv"
    np.savetxt(path, rows, delimiter=",", fmt="%d")
    x, y = digits.load_arrays(path)
    assert x.shape == (2, 8, 8) and list(y) == [3, 7] and x[1, 0, 0] == 64 % 17
    with pytest.raises(InvalidArgumentError, match="scikit-learn"):
        digits.load_data(path=tmp_path / "missing.csv.gz")
    with pytest.raises(InvalidArgumentError, match="test_split"):
        digits.load_data(test_split=1.5, path=path)


def test_digits_counts_match_the_original_data_set():
    if digits._locate() is None:
        pytest.skip("scikit-learn is not installed")
    x, y = digits.load_arrays()
    assert x.shape == (1797, 8, 8)
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


