"""The "alert me when ..." shortcuts of the market and offer pages (SPEC 8.4; issue 23,
issue 21 item 4).

Each shortcut turns a few values into the text of a subscription (SPEC 8.3) and sends the
user to the Alerts and feeds page with that text in its editor, unsaved: the user reads it,
may edit it, and saves it there. So a shortcut only ever writes text, never a subscription.

* One function per shortcut builds the text from values already checked
  (``price_query``, ``jump_query``, ``cheapest_lot_query``, ``best_bid_move_query``).
  Subjects go in as string literals (``quote_string``: the language's quotes, ``''``
  for a quote), so the dots of a subject are never read as anything but text.
* One Django form per shortcut checks what a person typed and names the alert; its
  ``alert()`` gives the ``Alert`` (query and name) once ``is_valid()`` holds.
* ``alerts_address`` is the page the user is sent to: ``/alerts/?query=<text>&name=<text>``,
  the contract with the Alerts and feeds page, which opens its editor pre-filled and saves
  nothing until the user does.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.urls import NoReverseMatch, reverse
from django.utils.text import Truncator

from exchange.market_rules import MarketSchema
from exchange.models import Market, Offer
from exchange.services.subscriptions import MAX_NAME
from matching import Type
from matching.values import format_decimal, quote_string

ALERTS_URL_NAME = "frontend:alerts"
ALERTS_PATH = "/alerts/"  # the Alerts and feeds page's address, fixed by its contract
MAX_PERCENT = Decimal(1000)
# How long a "jump" pattern keeps waiting for the second trade (its WITHIN): without a
# bound every trade would start an instance that lives until the subscription ends.
WINDOWS = (("10m", "10 minutes"), ("1h", "1 hour"), ("1d", "1 day"))


@dataclass(frozen=True)
class Alert:
    """What a shortcut fills in on the Alerts and feeds page."""

    query: str
    name: str


def alerts_address(alert: Alert) -> str:
    """The Alerts and feeds page, pre-filled with ``alert`` (nothing is saved by going there).

    The page is another part of the UI; until its URL is registered the contract's fixed
    path stands in for it."""
    try:
        base = reverse(ALERTS_URL_NAME)
    except NoReverseMatch:
        base = ALERTS_PATH
    return f"{base}?{urlencode({'query': alert.query, 'name': alert.name})}"


def _number(value: Decimal) -> str:
    """A decimal as the language reads it and as the user wrote it (``1.10`` stays
    ``1.10``), in plain digits: never an exponent (``1E+3``) nor a minus zero."""
    return format_decimal(value.copy_abs() if value == 0 else value)


def _named(text: str) -> str:
    return Truncator(text).chars(MAX_NAME)


def _subject_test(subject: str) -> str:
    return f"subject = {quote_string(subject)}"


# -- the query texts ------------------------------------------------------------------------


def price_query(*, subject: str, above: bool, price: Decimal) -> str:
    """Form 1: every trade of the market above (or below) ``price``, from now on."""
    op = ">" if above else "<"
    return (
        f"SELECT price, quantity WHERE type = 'trade', {_subject_test(subject)}, "
        f"price {op} {_number(price)}"
    )


def jump_query(*, subject: str, rise: bool, percent: Decimal, within: str) -> str:
    """Form 3: a trade of the market, then a later one more than ``percent`` higher (or
    lower) than it, both within ``within`` (a duration of the language, ``1h``)."""
    factor = 1 + percent / 100 if rise else 1 - percent / 100
    op = ">" if rise else "<"
    trades = f"FILTER{{type = 'trade' AND {_subject_test(subject)}}}(EVENTS)"
    return (
        f"SELECT a.price, b.price, DUR FROM {trades} AS a "
        f"NEXT{{b.price {op} {_number(factor)} * a.price}} {trades} AS b WITHIN {within}"
    )


def cheapest_lot_query(*, subject: str, low: Decimal, high: Decimal) -> str:
    """Form 4: the cheapest open offer of the market whose largest lot is between ``low``
    and ``high`` (SPEC 8.3's own example of a range-min watch)."""
    return (
        f"SELECT MIN(ask) FROM offers WHERE {_subject_test(subject)} "
        f"AND quantity_max BETWEEN {_number(low)} AND {_number(high)}"
    )


def best_bid_move_query(*, offer: int, by: Decimal, percent: bool) -> str:
    """Form 4, a single-offer watch: the offer's best bid, told only when it moved by more
    than ``by`` (a price difference, or a percentage of the value last told)."""
    threshold = f"{_number(by)}%" if percent else _number(by)
    return f"SELECT best_value FROM offers WHERE offer = {offer} NOTIFY WHEN CHANGED BY {threshold}"


def pattern_trades_query(*, pattern: str) -> str:
    """Form 1: every trade, from now on, on the markets whose subject matches ``pattern``
    (SPEC 8.2; markets created later included), for the market search's pattern."""
    return (
        "SELECT subject, price, quantity WHERE type = 'trade', "
        f"subject MATCHES {quote_string(pattern)}"
    )


def pattern_trades_alert(pattern: str) -> Alert:
    """The market search's "alert me on their trades" for a well-formed ``pattern``."""
    return Alert(pattern_trades_query(pattern=pattern), _named(f"Trades on {pattern}"))


# -- the forms ------------------------------------------------------------------------------


class _NotNegative(forms.DecimalField):
    """A number a person types, refused below 0 with Django's own message; with ``above_zero``
    (what the number is, "a percentage") 0 itself is then refused too, naming it."""

    def __init__(self, *, above_zero: str | None = None, **kwargs: Any) -> None:
        super().__init__(min_value=0, **kwargs)
        self.above_zero = above_zero

    def clean(self, value: Any) -> Decimal | None:
        number = super().clean(value)
        if self.above_zero is not None and number is not None and number <= 0:
            raise forms.ValidationError(f"Give {self.above_zero} above 0.")
        return number


def _amount(*, above_zero: str | None = None) -> forms.DecimalField:
    """A price or a lot: up to 20 digits, 10 after the point, not negative."""
    return _NotNegative(max_digits=20, decimal_places=10, above_zero=above_zero)


class ShortcutForm(forms.Form):
    """What every shortcut's form gives once ``is_valid()`` holds."""

    def alert(self) -> Alert:
        raise NotImplementedError


class _MarketShortcut(ShortcutForm):
    """A shortcut of the market page: the view gives it the market, whose subject and title
    go into the alert, and the market's schema, which some shortcuts check against."""

    def __init__(self, *args: Any, market: Market, schema: MarketSchema, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.market = market


class PriceAlertForm(_MarketShortcut):
    """The shortcut "alert me when a trade is above / below x"."""

    direction = forms.ChoiceField(choices=(("above", "above"), ("below", "below")))
    price = _amount()

    def alert(self) -> Alert:
        above = self.cleaned_data["direction"] == "above"
        price = self.cleaned_data["price"]
        return Alert(
            price_query(subject=self.market.subject, above=above, price=price),
            _named(
                f"{self.market.title}: a trade {'above' if above else 'below'} {_number(price)}"
            ),
        )


class JumpAlertForm(_MarketShortcut):
    """The shortcut "a jump of x%": a trade, then a later one x% higher (or lower)."""

    direction = forms.ChoiceField(choices=(("rise", "rise"), ("fall", "fall")))
    percent = _NotNegative(
        max_digits=8, decimal_places=4, max_value=MAX_PERCENT, above_zero="a percentage"
    )
    within = forms.ChoiceField(choices=WINDOWS)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        percent = data.get("percent")
        if data.get("direction") == "fall" and percent is not None and percent >= 100:
            self.add_error("percent", "A price cannot fall by 100% or more: give less than 100.")
        return data

    def alert(self) -> Alert:
        rise = self.cleaned_data["direction"] == "rise"
        percent = self.cleaned_data["percent"]
        within = self.cleaned_data["within"]
        word = "rise" if rise else "fall"
        return Alert(
            jump_query(subject=self.market.subject, rise=rise, percent=percent, within=within),
            _named(
                f"{self.market.title}: a {word} of more than {_number(percent)}% within {within}"
            ),
        )


class CheapestLotForm(_MarketShortcut):
    """The shortcut "watch the cheapest offer for a lot of a to b" (issue 21 item 4). Only for markets
    with a quantity attribute (the offers' ``quantity_max`` comes from it)."""

    low = _amount()
    high = _amount()

    def __init__(self, *args: Any, market: Market, schema: MarketSchema, **kwargs: Any) -> None:
        super().__init__(*args, market=market, schema=schema, **kwargs)
        self.quantity = schema.by_role("quantity")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.quantity is None:
            raise forms.ValidationError(
                "This market has no quantity attribute, so its offers have no lot to watch."
            )
        unit = self.quantity.unit or "units"
        for name in ("low", "high"):
            value = data.get(name)
            if self.quantity.type is Type.INT and value is not None and value % 1:
                self.add_error(name, f"Lots are whole numbers of {unit} here: give one.")
        low, high = data.get("low"), data.get("high")
        if low is not None and high is not None and low > high:
            self.add_error(
                "high", f"The largest lot must be at least the smallest ({_number(low)})."
            )
        return data

    def alert(self) -> Alert:
        low, high = self.cleaned_data["low"], self.cleaned_data["high"]
        return Alert(
            cheapest_lot_query(subject=self.market.subject, low=low, high=high),
            _named(
                f"{self.market.title}: cheapest offer for a lot of {_number(low)} to {_number(high)}"
            ),
        )


class BestBidMoveForm(ShortcutForm):
    """The shortcut "tell me when the best bid moves by x / x%" on one offer's page."""

    by = _amount(above_zero="an amount")
    unit = forms.ChoiceField(choices=(("percent", "%"), ("price", "price")))

    def __init__(self, *args: Any, offer: Offer, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offer = offer

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        by = data.get("by")
        if data.get("unit") == "percent" and by is not None and by > MAX_PERCENT:
            self.add_error("by", f"Give a percentage of at most {_number(MAX_PERCENT)}.")
        return data

    def alert(self) -> Alert:
        by = self.cleaned_data["by"]
        percent = self.cleaned_data["unit"] == "percent"
        amount = f"{_number(by)}%" if percent else _number(by)
        return Alert(
            best_bid_move_query(offer=self.offer.pk, by=by, percent=percent),
            _named(f"Offer #{self.offer.pk}: best bid moves by more than {amount}"),
        )


MARKET_SHORTCUTS: dict[str, type[_MarketShortcut]] = {
    "price": PriceAlertForm,
    "jump": JumpAlertForm,
    "lot": CheapestLotForm,
}
