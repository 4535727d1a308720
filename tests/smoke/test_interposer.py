"""The interposer on the compiled fixture: what it records, and what it leaves alone."""

from __future__ import annotations

import subprocess

import pytest

from smoke_helpers import fixture_run  # noqa: F401 (a fixture)
from patchkit.errors import EnvironmentProblem, PatchkitError
from patchkit.smoke.interpose import build_interposer, preload_env, read_log

GET, SET = "llama_state_seq_get_data_ext", "llama_state_seq_set_data_ext"


def test_every_call_recorded_once_with_its_flags_sequence_and_size(fixture_run):
    assert [(c.function, c.flags, c.seq_id, c.size) for c in fixture_run.calls] == [
        (GET, 3, 1, 32),  # spec_ckpt.update_tgt(PARTIAL_ONLY | ON_DEVICE)
        (GET, 1, 1, 24),  # spec_ckpt.update_dft(PARTIAL_ONLY)
        (SET, 3, 1, 32), (SET, 3, 1, 32),  # ckpt.load_tgt, twice
        (GET, 1, 1, 32),  # prompt checkpoint update_tgt
        (SET, 3, 1, 32),  # prompt checkpoint load_tgt
        (GET, 0, 7, 8),  # the server's own call: flags 0 ...
        ("llama_state_seq_get_data", None, 8, 8),  # ... and no flags argument at all
        ("llama_state_seq_set_data", None, 8, 8),
        # These two re-enter the plain and the _ext variants inside libllama: one record each.
        ("llama_state_seq_save_file", None, 9, 16),
        ("llama_state_seq_load_file", None, 9, 8),
    ]
    assert {c.pid for c in fixture_run.calls} == {fixture_run.pid}


def test_the_program_runs_as_without_it(fixture_run):
    assert (fixture_run.returncode, fixture_run.stdout, fixture_run.stderr) == (0, "", "")


def test_plain_variants_reenter_through_the_preload(fixture_run):
    # The one-record-per-call above holds although the plain variants reach the _ext ones
    # through the PLT, where the preloaded definitions win: the depth counter's work.
    relocations = subprocess.run(["readelf", "-rW", str(fixture_run.bin / "libllama.so")],
                                 capture_output=True, text=True, check=True).stdout
    assert {GET, SET, "llama_state_seq_get_data", "llama_state_seq_set_data"} <= {
        line.split()[4] for line in relocations.splitlines() if "JUMP_SLOT" in line}


def test_frames_name_the_calling_modules_innermost_first(fixture_run):
    wrapper_call, own_call = fixture_run.calls[0], fixture_run.calls[6]
    assert [f.module.rsplit("/", 1)[1] for f in wrapper_call.frames[:2]] == ["libcommon.so", "llama-server"]
    assert own_call.frames[0].module == str(fixture_run.bin / "llama-server")
    # A shared library's offset is its address less the load bias, the same for all its frames.
    biases = {f.address - f.offset for c in fixture_run.calls for f in c.frames if f.module.endswith("libcommon.so")}
    assert len(biases) == 1


def test_nothing_recorded_without_a_log_and_no_log_means_not_loaded(fixture_run, tmp_path):
    env = preload_env(build_interposer(tmp_path), tmp_path / "calls.log")
    del env["PATCHKIT_SMOKE_LOG"]
    result = subprocess.run([str(fixture_run.bin / "llama-server")], env=env, capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    with pytest.raises(EnvironmentProblem, match="never loaded"):
        read_log(tmp_path / "calls.log")


def test_preload_env_appends_to_an_existing_preload(tmp_path):
    env = preload_env(tmp_path / "i.so", tmp_path / "log", base={"LD_PRELOAD": "/opt/other.so"})
    assert env == {"LD_PRELOAD": f"/opt/other.so:{tmp_path / 'i.so'}", "PATCHKIT_SMOKE_LOG": str(tmp_path / "log")}
    with pytest.raises(PatchkitError, match="space or a colon"):
        preload_env(tmp_path / "a b" / "i.so", tmp_path / "log")


def test_a_missing_compiler_is_an_environment_problem(tmp_path):
    with pytest.raises(EnvironmentProblem, match="no C compiler"):
        build_interposer(tmp_path, cc="patchkit-no-such-cc")


def test_a_foreign_log_line_is_named(tmp_path):
    log = tmp_path / "calls.log"
    log.write_text("hello\n")
    with pytest.raises(PatchkitError, match=r"calls.log:1: not a line the smoke interposer writes"):
        read_log(log)
