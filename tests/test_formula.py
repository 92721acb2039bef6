import math

import numpy as np
import pytest

from relevancy import cosine_similarities, relevancy_score


def test_cosine_matches_definition():
    a = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    b = np.array([0.5, -1.0, 2.0])
    expected = [(row @ b) / (np.linalg.norm(row) * np.linalg.norm(b)) for row in a]
    assert np.allclose(cosine_similarities(a, b), expected)


def test_cosine_is_zero_vector_safe():
    sims = cosine_similarities(np.array([[0.0, 0.0], [1.0, 0.0]]), np.array([1.0, 0.0]))
    assert sims.tolist() == [0.0, 1.0]
    assert cosine_similarities(np.array([[1.0, 1.0]]), np.zeros(2)).tolist() == [0.0]


def test_cosine_rejects_dimension_mismatch():
    with pytest.raises(ValueError, match="dimension mismatch"):
        cosine_similarities(np.ones((2, 3)), np.ones(4))


def test_score_is_mean_similarity():
    assert relevancy_score([0.5, 0.25, 0.75], [False, False, False]) == pytest.approx(0.5)


def test_score_zero_only_when_all_noncommittal():
    assert relevancy_score([0.9, 0.8, 0.7], [True, True, True]) == 0.0
    assert relevancy_score([0.9, 0.8, 0.7], [True, False, True]) == pytest.approx(0.8)


def test_score_not_clipped():
    assert relevancy_score([-0.4, -0.2], [False, False]) == pytest.approx(-0.3)


def test_score_nan_when_nothing_usable():
    assert math.isnan(relevancy_score([], []))


def test_score_requires_matching_lengths():
    with pytest.raises(ValueError, match="2 similarities but 1"):
        relevancy_score([0.1, 0.2], [False])
