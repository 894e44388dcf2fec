"""The embedded model's child process, at the seam where the plane reads its
first line: a stop that closes the pipe under the read is an answer ("it did
not start"), never an exception in a thread."""

import io
import os
from types import SimpleNamespace

import pytest

from plane.providers.llama_child import Child


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_pipe_closed_under_the_first_read_reads_as_no_line() -> None:
    readable, writable = os.pipe()
    os.close(writable)
    stdout = io.TextIOWrapper(io.FileIO(readable, "r"))
    stdout.close()  # as `end()` does when the plane stops a model that is starting
    child = SimpleNamespace(process=None)
    assert Child._read_line(child, stdout, timeout_s=5) == ""
