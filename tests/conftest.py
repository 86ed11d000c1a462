import numpy as np
import pytest

from collect import paths


@pytest.fixture(scope="session")
def shipped_model():
    from collect.agent import shipped_model
    return shipped_model()


@pytest.fixture(scope="session")
def fixed_states():
    return np.load(paths.FIXED_STATES)
