import pytest

from memd.sources.redact import MARK, redact, redact_lines

KEY_BLOCK = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("key sk-proj-Q9x8W7v6U5t4S3r2Q1p0OnMlKjIhGfEd ok", "Q9x8W7v6", "key "),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGh", ""),
        ("stripe sk_live_51HqLyjWDarjtT1zdp7dc", "51HqLyj", "stripe"),
        ("GITHUB_TOKEN=ghp_R2d2C3poBb8Yoda0Luke1Leia2Han3Solo4Chew", "R2d2C3po", "GITHUB_TOKEN="),
        ("pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "11ABCDEFG", "pat"),
        ("glpat-xY12abCD34efGH56ijKL", "xY12abCD", ""),
        ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "123456789012", "slack"),
        ("hook https://hooks.slack.com/services/T000/B000/XXXXXXXX", "T000/B000", "hook"),
        ("AWS key AKIAIOSFODNN7EXAMPLE.", "AKIAIOSFODNN7", "AWS key"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
         "wJalrXUtnFEMI", "aws_secret_access_key = "),
        ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA123", "google"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AbCdEfGh", ""),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJub25uYSJ9.c2lnbmF0dXJlLWJ5dGVz", "eyJzdWIi", "jwt"),
        ("Authorization: Bearer abc.def-ghi_jkl", "abc.def", "Authorization: Bearer "),
        ('"authorization": "Basic dXNlcjpwYXNzd29yZA=="', "dXNlcjpw", '"authorization": "Basic '),
        ("curl -H 'Authorization: token 0123456789abcdef'", "0123456789", "Authorization: token "),
        ("bearer Zm9vYmFyYmF6cXV4MTIz in a header", "Zm9vYmFy", "bearer "),
        ("password=hunter2 and more", "hunter2", "password="),
        ('db_password: "s3cr3t!"', "s3cr3t", 'db_password: "'),
        ("SECRET_KEY='abc123xyz'", "abc123xyz", "SECRET_KEY='"),
        ('{\\"api_key\\": \\"k-998877\\"}', "998877", "api_key"),
        ("client_secret=9f8e7d6c", "9f8e7d6c", "client_secret="),
        ("postgres://shop:Tr0ub4dor3@db-staging:5432/shop", "Tr0ub4dor3", "postgres://shop:"),
        (f"cat id_ed25519\n{KEY_BLOCK}\ndone", "b3BlbnNz", "cat id_ed25519"),
    ],
)  # fmt: skip
def test_secrets_are_redacted(text, secret, kept):
    """Each rule in README's list removes its secret and keeps the words around it."""
    out = redact(text)
    assert secret not in out and MARK in out
    assert kept in out


@pytest.mark.parametrize(
    "text",
    [
        "Set max_tokens: 400 and token_count=12 for the run.",
        "The password reset flow sends an email.",
        "We use scikit-learn (sk-learn) and ghp_short.",
        "Authorization is handled by the gateway.",
        "The tokens were counted: 1200 tokens.",
        "AKIA is the prefix of AWS keys.",
        "eyJ is how a JWT starts.",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"here is the credential: aws_secret_access_key = {AWS_SECRET}",
         "credential: aws_secret_access_key = "),
        (f"credential: aws_secret_access_key={AWS_SECRET}", "credential: "),
        (f'credentials: "aws_secret_access_key": "{AWS_SECRET}"', '"aws_secret_access_key": "'),
        (f"token: password: {AWS_SECRET}", "token: password: "),
        (f"secret: MY_SETTING = {AWS_SECRET} and more", "MY_SETTING = "),
    ],
)  # fmt: skip
def test_a_chained_assignment_redacts_the_last_value(text, kept):
    """The value of "credential:" may only name the assignment that holds the secret."""
    out = redact(text)
    assert AWS_SECRET not in out and out.count(MARK) == 1
    assert kept in out


def test_redacting_lines_keeps_the_line_count():
    """memory_get redacts line by line: line numbers stay those of the file."""
    text = "a password=x\nb\nAuthorization: Bearer abcdefghijklmnop\n"
    out = redact_lines(text)
    assert out.count("\n") == text.count("\n")
    assert out.splitlines()[0] == f"a password={MARK}"
