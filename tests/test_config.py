from pathlib import Path

import pytest

from memd.config import Config
from memd.configfile import default_config_path, default_state_dir, load_config, parse_config
from memd.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_any_file(tmp_path):
    """With no config file, memd uses ~/clawd and ~/.local/state/memd."""
    cfg = load_config(env={"HOME": str(tmp_path)})
    assert cfg.workspace().path == tmp_path / "clawd"
    assert cfg.state_dir == tmp_path / ".local" / "state" / "memd"
    assert cfg.chunking.tokens == 400 and cfg.chunking.overlap == 120
    assert cfg.search.max_results == 6 and cfg.search.min_score == 0.38
    assert cfg.source is None


def test_repository_config_yaml_is_valid_and_all_defaults(tmp_path):
    """The documented config.yaml loads and equals the built-in defaults."""
    example = Path(__file__).parent.parent / "config.yaml"
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test"}
    documented = load_config(example, env=env)
    builtin = parse_config({}, env=env)
    for section in ("chunking", "watch", "server", "search", "flush", "log"):
        assert getattr(documented, section) == getattr(builtin, section), section
    assert documented.workspace().path == builtin.workspace().path
    assert documented.state_dir == builtin.state_dir


def test_lookup_order_env_then_xdg(tmp_path):
    """$MEMD_CONFIG wins over the XDG config folder, which wins over ~/.config."""
    assert default_config_path({"HOME": "/h"}) == Path("/h/.config/memd/config.yaml")
    assert default_config_path({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path(
        "/x/memd/config.yaml"
    )
    assert default_config_path({"HOME": "/h", "MEMD_CONFIG": "/c.yaml"}) == Path("/c.yaml")
    assert default_state_dir({"HOME": "/h"}) == Path("/h/.local/state/memd")


def test_memd_config_env_is_read(tmp_path):
    """A file named by $MEMD_CONFIG is loaded."""
    path = write(tmp_path, "search: {max_results: 9}\n")
    cfg = load_config(env={"HOME": str(tmp_path), "MEMD_CONFIG": str(path)})
    assert cfg.search.max_results == 9
    assert cfg.source == path.resolve()


def test_explicit_missing_file_is_an_error(tmp_path):
    """A config path that does not exist stops start-up, naming the path."""
    with pytest.raises(ConfigError, match="nope.yaml does not exist"):
        load_config(tmp_path / "nope.yaml", env={"HOME": str(tmp_path)})


def test_unknown_key_names_key_and_file(tmp_path):
    """An unknown key is refused with its dotted name, the file and a suggestion."""
    path = write(tmp_path, "search:\n  max_result: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path, env={})
    message = str(err.value)
    assert "search.max_result" in message
    assert str(path.resolve()) in message
    assert "max_results" in message


def test_an_unknown_key_suggests_what_other_tools_call_it(tmp_path):
    path = write(tmp_path, "search: {limit: 3}\n")
    with pytest.raises(ConfigError, match=r"unknown key 'search.limit'.*mean 'max_results'"):
        load_config(path, env={})


def test_unknown_top_level_key(tmp_path):
    path = write(tmp_path, "workspaec: ~/x\n")
    with pytest.raises(ConfigError, match=r"unknown key 'workspaec'.*did you mean 'workspace'"):
        load_config(path, env={})


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("chunking: {tokens: many}", "chunking.tokens .* must be a whole number"),
        ("chunking: {tokens: 100, overlap: 100}", "overlap must be at least 0 and less than"),
        ("search: {min_score: 2}", "min_score must be between 0 and 1"),
        ("search: {fusion: magic}", "search.fusion .* must be one of weighted, rrf"),
        ("embeddings: {provider: cohere}", "embeddings.provider"),
        ("log: {level: loud}", "log.level"),
        ("watch: {debounce_ms: true}", "watch.debounce_ms .* got a boolean|whole number"),
        ("chunking: 5", "chunking .* must be a mapping"),
        ("extra_paths: ~/vault", "extra_paths .* must be a list"),
        ("workspace: 5", "workspace .* must be a string"),
        ("flush: {timezone: Mars/Olympus}", "flush .* not an IANA time zone"),
    ],
)
def test_bad_values_name_the_key(tmp_path, text, needle):
    """A value of the wrong type or range names the key and the file."""
    path = write(tmp_path, text + "\n")
    with pytest.raises(ConfigError, match=needle) as err:
        load_config(path, env={})
    assert str(path.resolve()) in str(err.value)


def test_invalid_yaml_is_reported(tmp_path):
    path = write(tmp_path, "search: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path, env={})


def test_env_expansion(tmp_path):
    """${VAR} takes its value from the environment; an unset one is an error naming it."""
    path = write(tmp_path, "embeddings:\n  api_key: ${MY_KEY}\n  base_url: http://h/${MY_PATH}\n")
    cfg = load_config(path, env={"MY_KEY": "secret", "MY_PATH": "v1"})
    assert cfg.embeddings.api_key == "secret"
    assert cfg.embeddings.base_url == "http://h/v1"
    with pytest.raises(ConfigError, match="embeddings.api_key .* MY_KEY is not set"):
        load_config(path, env={"MY_PATH": "v1"})


def test_relative_paths_follow_the_config_file(tmp_path):
    """Relative paths in a config file are taken from the file's folder."""
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "config.yaml"
    path.write_text("workspace: notes\nstate_dir: ./state\nextra_paths: [../vault]\n")
    cfg = load_config(path, env={})
    ws = cfg.workspace()
    assert ws.path == tmp_path / "sub" / "notes"
    assert cfg.state_dir == tmp_path / "sub" / "state"
    assert [e.path for e in ws.extra_paths] == [tmp_path / "vault"]


def test_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = parse_config({"workspace": "~/notes"}, env={})
    assert cfg.workspace().path == tmp_path / "notes"


def test_many_workspaces(tmp_path):
    """The workspaces form maps names to folders; the first is the default."""
    raw = {
        "workspaces": {
            "main": str(tmp_path / "a"),
            "work": {"workspace": str(tmp_path / "b"), "extra_paths": [str(tmp_path / "v")]},
        },
        "exclude": ["drafts/**"],
    }
    cfg = parse_config(raw, env={})
    assert [w.name for w in cfg.workspaces] == ["main", "work"]
    assert cfg.workspace().name == "main"
    assert [e.path for e in cfg.workspace("work").extra_paths] == [tmp_path / "v"]
    assert cfg.workspace("main").exclude == ("drafts/**",)
    with pytest.raises(ConfigError, match="no workspace named 'play'"):
        cfg.workspace("play")


def test_workspace_and_workspaces_together_is_an_error():
    with pytest.raises(ConfigError, match="either 'workspace' or 'workspaces'"):
        parse_config({"workspace": "/a", "workspaces": {"x": "/b"}}, env={})


def test_unknown_key_inside_a_workspace_entry():
    with pytest.raises(ConfigError, match="workspaces.w.extra_path"):
        parse_config({"workspaces": {"w": {"workspace": "/a", "extra_path": []}}}, env={})


def test_config_is_frozen():
    cfg = parse_config({}, env={"HOME": "/h"})
    assert isinstance(cfg, Config)
    with pytest.raises(AttributeError):
        cfg.state_dir = Path("/x")  # type: ignore[misc]


def test_flush_llm_section(tmp_path):
    path = write(tmp_path, "flush:\n  llm: {model: gpt-x, base_url: 'http://127.0.0.1:1/v1'}\n")
    cfg = load_config(path, env={})
    assert cfg.flush.llm is not None and cfg.flush.llm.model == "gpt-x"
    path = write(tmp_path, "flush:\n  llm: {base_url: x}\n")
    with pytest.raises(ConfigError, match="flush.llm"):
        load_config(path, env={})


def test_default_socket_follows_xdg_runtime_dir(tmp_path):
    """The socket is $XDG_RUNTIME_DIR/memd/memd.sock, else memd.sock in the state folder."""
    cfg = parse_config({}, env={"HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/7"})
    assert cfg.socket == Path("/run/user/7/memd/memd.sock")
    cfg = parse_config({}, env={"HOME": "/h"})
    assert cfg.socket == Path("/h/.local/state/memd/memd.sock")
    cfg = parse_config({"state_dir": "/s"}, env={"HOME": "/h"})
    assert cfg.socket == Path("/s/memd.sock")
    cfg = parse_config({"socket": "/tmp/m.sock"}, env={"HOME": "/h"})
    assert cfg.socket == Path("/tmp/m.sock")


def test_server_idle_timeout_must_be_positive(tmp_path):
    path = write(tmp_path, "server: {idle_timeout_s: 0}\n")
    with pytest.raises(ConfigError, match="idle_timeout_s must be positive"):
        load_config(path, env={})


def test_extra_paths_with_their_own_globs(tmp_path):
    raw = {
        "extra_paths": [
            "/plain",
            {"path": "/vault", "include": ["Notes/**"], "exclude": ["Notes/Private/**"]},
        ]
    }
    extras = parse_config(raw, env={"HOME": "/h"}).workspace().extra_paths
    assert extras[0].path == Path("/plain") and extras[0].include == ()
    assert extras[1].include == ("Notes/**",) and extras[1].exclude == ("Notes/Private/**",)
    with pytest.raises(ConfigError, match=r"extra_paths\[0\].includes"):
        parse_config({"extra_paths": [{"path": "/v", "includes": []}]}, env={})
    with pytest.raises(ConfigError, match="needs a 'path'"):
        parse_config({"extra_paths": [{"include": ["x"]}]}, env={})


def test_team_section():
    raw = {"workspace": "/w", "team": {"dsn": "postgresql://a@db/memory", "publish": ["default"]}}
    team = parse_config(raw, env={"HOME": "/h"}).team
    assert team.enabled and team.publishes("default") and not team.publishes("other")
    assert team.host_name()  # the hostname when not given
    assert not parse_config({"workspace": "/w"}, env={"HOME": "/h"}).team.enabled
    with pytest.raises(ConfigError, match=r"team.publish in .*: must be a list"):
        parse_config({"workspace": "/w", "team": {"publish": "default"}}, env={"HOME": "/h"})
    with pytest.raises(ConfigError, match="team.timeout_s|timeout_s must be positive"):
        parse_config({"workspace": "/w", "team": {"timeout_s": 0}}, env={"HOME": "/h"})
    with pytest.raises(ConfigError, match="host uses letters"):
        parse_config({"workspace": "/w", "team": {"host": "a b"}}, env={"HOME": "/h"})


def test_a_models_cosine_band_is_set_and_checked(tmp_path):
    """An OpenAI-compatible model whose cosines sit elsewhere gets its own vector scale."""
    from memd.embed.providers import make_embedder

    raw = {
        "workspace": "/w",
        "embeddings": {"provider": "openai", "model": "m", "cosine_band": [0.1, 0.6]},
    }
    settings = parse_config(raw, env={"HOME": "/h"}).embeddings
    assert make_embedder(settings).cosine_band == (0.1, 0.6)
    default = parse_config(
        {"workspace": "/w", "embeddings": {"provider": "openai", "model": "m"}}, env={}
    )
    assert make_embedder(default.embeddings).cosine_band == (0.2, 0.7)
    for bad, says in (([0.6, 0.1], "the lower first"), ([0.5], "must be a list of 2")):
        raw["embeddings"]["cosine_band"] = bad
        with pytest.raises(ConfigError, match=says):
            parse_config(raw, env={"HOME": "/h"})
