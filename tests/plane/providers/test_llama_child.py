"""The embedded model's child process, at the seam where the plane reads its
first line: a stop that closes the pipe under the read is an answer ("it did
not start"), never an exception in a thread."""

import io
import os

import pytest

from plane.providers.llama_child import first_line


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
