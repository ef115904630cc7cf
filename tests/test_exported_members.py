import memd


def test_all_exports_exist_and_are_public():
    """Everything in memd.__all__ exists, and nothing private is exported."""
    for name in memd.__all__:
        assert hasattr(memd, name), name
        assert not name.startswith("_") or name == "__version__"
    assert sorted(memd.__all__) == memd.__all__


def test_the_command_line_imports_only_what_talking_to_a_daemon_needs():
    """`memd search` answered by a daemon must not pay for numpy, markdown-it or the index."""
    import subprocess
    import sys

    heavy = ["numpy", "markdown_it", "structlog", "apsw", "openai", "memd.memory", "memd.daemon"]
    code = (
        "import sys, memd, memd.cli, memd.router, memd.client; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
