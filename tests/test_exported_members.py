import memd


def test_all_exports_exist_and_are_public():
    """Everything in memd.__all__ exists, and nothing private is exported."""
    for name in memd.__all__:
        assert hasattr(memd, name), name
        assert not name.startswith("_") or name == "__version__"
    assert sorted(memd.__all__) == memd.__all__
