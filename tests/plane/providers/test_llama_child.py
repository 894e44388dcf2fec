"""The embedded model's child process, at the seam where the plane reads its
first line: a stop that closes the pipe under the read is an answer ("it did
not start"), never an exception in a thread."""

import io
import os

import pytest

from plane.errors import ProviderError
from plane.providers.llama_child import Child, first_line


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_pipe_closed_under_the_first_read_reads_as_no_line() -> None:
    readable, writable = os.pipe()
    os.close(writable)
    stdout = io.TextIOWrapper(io.FileIO(readable, "r"))
    stdout.close()  # as `end()` does when the plane stops a model that is starting
    assert first_line(stdout, timeout_s=5) == ""


def test_a_child_that_writes_nothing_in_time_gives_no_line() -> None:
    readable, writable = os.pipe()
    with io.TextIOWrapper(io.FileIO(readable, "r")) as stdout:
        assert first_line(stdout, timeout_s=0.05) is None
        os.close(writable)  # the reader left behind reads the end and stops


def test_a_child_stopped_before_it_was_told_its_settings_did_not_start() -> None:
    """A stop that comes before the settings are written (the plane stopping
    while the model starts) closed the pipe the settings go down: one
    ProviderError, not a ValueError from the closed file."""
    child = Child()
    child.end()
    with pytest.raises(ProviderError, match=r"^The embedded model did not start: "):
        child.listening({}, timeout_s=5)
