"""Reading the completeness rules a kind hands its pages (annotation/kinds/<kind>/page.py)."""


def rule_paths(rules: list[dict], prefix: str = "") -> set[str]:
    """The paths of the fields the rules require, list indexes as []: "claims[].stances[]"."""
    paths = set()
    for rule in rules:
        path = prefix + rule["field"]
        if "rules" in rule:
            paths |= rule_paths(rule["rules"], f"{path}[].")
        else:
            paths.add(f"{path}[]" if rule.get("each") else path)
    return paths
