import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memd.serve import service


def test_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    """The rendered unit is valid for systemd, with no warnings, even with odd paths."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    config = tmp_path / "my conf" / "100% $HOME.yaml"
    unit = tmp_path / "memd.service"
    unit.write_text(service.render_systemd(service.serve_command(config)))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    out = subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        capture_output=True, text=True, env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == ""


def test_systemd_unit_content():
    text = service.render_systemd(service.serve_command(Path("/etc/memd.yaml")))
    assert f"ExecStart={sys.executable} -m memd --config /etc/memd.yaml serve" in text
    for line in ("Type=notify", "Restart=on-failure", "ExecReload=/bin/kill -HUP $MAINPID",
                 "WantedBy=default.target", "NoNewPrivileges=yes", "UMask=0077"):  # fmt: skip
        assert line in text
    assert "@" not in text.split("[Service]")[1].split("ExecReload")[0]


def test_launchd_plist_parses_with_plistlib(tmp_path):
    command = service.serve_command(Path("/Users/me/a & b/memd.yaml"))
    data = plistlib.loads(service.render_launchd(command, tmp_path / "Logs").encode())
    assert data["Label"] == "com.memd.daemon"
    assert data["ProgramArguments"] == command
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["StandardErrorPath"] == str(tmp_path / "Logs" / "memd.log")


def test_launchd_plan(tmp_path):
    p = service.plan(None, {"HOME": str(tmp_path)}, platform="darwin")
    assert p.path == tmp_path / "Library" / "LaunchAgents" / "com.memd.daemon.plist"
    assert p.enable == (("launchctl", "bootstrap", f"gui/{os.getuid()}", str(p.path)),)
    assert p.disable == (("launchctl", "bootout", f"gui/{os.getuid()}/com.memd.daemon"),)


def test_unsupported_platform():
    with pytest.raises(service.ServiceError, match="run 'memd serve'"):
        service.plan(None, {"HOME": "/h"}, platform="win32")


@pytest.fixture
def fake_systemctl(tmp_path):
    """A stand-in `systemctl` on PATH that records how it was called."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    script = bin_dir / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho "memd.serve.service - active"\n')
    script.chmod(0o755)
    return bin_dir, calls


def run_cli(tmp_path, path_dirs, *args):
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "PATH": os.pathsep.join([*path_dirs, "/usr/bin", "/bin"]),
    }
    env.pop("MEMD_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "memd", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux only")
def test_service_install_status_uninstall(tmp_path, fake_systemctl):
    bin_dir, calls = fake_systemctl
    out = run_cli(tmp_path, [str(bin_dir)], "service", "install")
    assert out.returncode == 0, out.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "memd.service"
    assert unit.exists() and f"ExecStart={sys.executable} -m memd serve" in unit.read_text()
    assert calls.read_text().splitlines() == [
        "--user show-environment",  # is there a user manager at all? asked first
        "--user daemon-reload",
        "--user enable --now memd.service",
    ]
    out = run_cli(tmp_path, [str(bin_dir)], "service", "status")
    assert out.returncode == 0 and "active" in out.stdout
    out = run_cli(tmp_path, [str(bin_dir)], "service", "uninstall")
    assert out.returncode == 0 and not unit.exists()
    assert "--user disable --now memd.service" in calls.read_text()
    out = run_cli(tmp_path, [str(bin_dir)], "service", "status")
    assert out.returncode == 1 and "not installed" in out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux only")
def test_service_install_without_systemctl_says_what_to_do(tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env_path = [str(empty)]
    out = subprocess.run(
        [sys.executable, "-m", "memd", "service", "install"],
        env={**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
             "PATH": os.pathsep.join(env_path)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 1
    assert "systemctl is not available" in out.stderr and "-m memd serve" in out.stderr
    assert "Nothing was installed" in out.stderr
    assert not (tmp_path / "cfg" / "systemd" / "user" / "memd.service").exists()


def test_rendering_changes_only_the_exec_start_line():
    template = service.template("systemd/memd.service").splitlines()
    rendered = service.render_systemd(["/opt/py", "-m", "memd", "serve"]).splitlines()
    changed = [(a, b) for a, b in zip(template, rendered, strict=True) if a != b]
    assert changed == [("ExecStart=@EXEC_START@", "ExecStart=/opt/py -m memd serve")]


@pytest.fixture
def no_bus(tmp_path):
    """A `systemctl` that fails as it does in a container or over ssh without lingering."""
    bin_dir = tmp_path / "nobus-bin"
    bin_dir.mkdir()
    calls = tmp_path / "nobus-calls.txt"
    script = bin_dir / "systemctl"
    script.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        'echo "Failed to connect to bus: No medium found" >&2\nexit 1\n'
    )
    script.chmod(0o755)
    return bin_dir, calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux only")
def test_no_user_session_bus(tmp_path, no_bus):
    """Detected before anything is written; the choices are explained; status and uninstall
    say what is true."""
    bin_dir, calls = no_bus
    unit = tmp_path / "cfg" / "systemd" / "user" / "memd.service"
    out = run_cli(tmp_path, [str(bin_dir)], "service", "install")
    assert out.returncode == 1
    assert "no systemd user manager is reachable (Failed to connect to bus" in out.stderr
    assert "loginctl enable-linger $USER" in out.stderr and "another supervisor" in out.stderr
    assert f"{sys.executable} -m memd serve" in out.stderr and "Nothing was installed" in out.stderr
    assert not unit.exists() and not unit.parent.exists()
    assert calls.read_text().splitlines() == ["--user show-environment"]

    # A unit left from a time the manager was reachable, and the link 'enable' made.
    unit.parent.mkdir(parents=True)
    unit.write_text(service.render_systemd(service.serve_command(None)))
    wants = unit.parent / "default.target.wants"
    wants.mkdir()
    (wants / "memd.service").symlink_to(unit)
    out = run_cli(tmp_path, [str(bin_dir)], "service", "status")
    assert out.returncode == 1
    assert f"{unit} is installed, but no systemd user manager is reachable" in out.stdout
    out = run_cli(tmp_path, [str(bin_dir)], "service", "uninstall")
    assert out.returncode == 0, out.stderr
    assert "ran systemctl" not in out.stdout  # nothing claimed that could not have worked
    assert "did not stop or disable it: systemd is not reachable" in out.stdout
    assert not unit.exists() and not (wants / "memd.service").is_symlink()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd is Linux only")
def test_a_failed_enable_leaves_nothing_behind(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "systemctl"
    script.write_text(
        '#!/bin/sh\ncase "$*" in *enable*) echo "Unit memd.service is masked." >&2; exit 1;; '
        "esac\nexit 0\n"
    )
    script.chmod(0o755)
    out = run_cli(tmp_path, [str(bin_dir)], "service", "install")
    assert out.returncode == 1 and "is masked" in out.stderr
    assert not (tmp_path / "cfg" / "systemd" / "user" / "memd.service").exists()
