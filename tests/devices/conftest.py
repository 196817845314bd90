import pytest
import rustgrad

from . import fake_backend  # noqa: F401  (registers the fake device)

DEVICES = [
    "cpu",
    "fake",
    pytest.param("cuda", marks=pytest.mark.cuda),
]


@pytest.fixture(params=DEVICES)
def device(request):
    if request.param == "cuda" and not rustgrad.cuda.is_available():
        pytest.skip("CuPy sees no GPU")
    return request.param
