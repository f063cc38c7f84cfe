"""Template helpers of the research pages (leaderboard) and the project nav that links to them."""

from django import template

from annotation import selectors

register = template.Library()


@register.filter
def researcher_of(user, project) -> bool:
    """Whether ``user`` may see the project's research pages (agreement, leaderboard): its
    admins and consolidators. The nav is included by pages whose views do not pass the roles."""
    return bool(getattr(user, "is_authenticated", False)) and selectors.can_consolidate(user, project)


@register.filter
def signed(value, places: int = 3) -> str:
    """A difference with its sign: 0.1234 -> "+0.123"; None -> "–"."""
    if value is None or isinstance(value, bool):
        return "–"
    return f"{value:+.{int(places)}f}"
