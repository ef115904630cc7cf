import subprocess
import sys
import textwrap

from memd.sources.chunker import count_tokens


def test_counts_cl100k_tokens():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special-token text is plain text here


def test_encoding_loads_with_no_network_and_no_cache(tmp_path):
    """The cl100k_base ranks come from the installed package, never from the network."""
    script = textwrap.dedent(
        """
        import socket
        def refuse(*args, **kwargs):
            raise OSError("network disabled in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from memd.sources.chunker import count_tokens
        print(count_tokens("offline tokens work"))
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == count_tokens("offline tokens work")
