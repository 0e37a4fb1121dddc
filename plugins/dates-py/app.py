"""Example plugin `dates-py`: calendar arithmetic with Python's standard library.

Models are unreliable at date arithmetic; these tools do it exactly. Built with
the Python guest SDK (`guest-sdk/python`): `cargo xtask plugins` builds it into
`target/plugins/dates-py.wasm`.
"""

from __future__ import annotations

import calendar
import typing
import datetime as dt
from typing import Literal

from toolhost_guest import InvalidArguments, Output, Part, tool

Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAYS = list(typing.get_args(Weekday))


def _parse(name: str, text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InvalidArguments(f"`{name}` must be a date as YYYY-MM-DD, not {text!r}") from None


def _business_days(start: dt.date, end: dt.date) -> int:
    """Weekdays (Monday to Friday) from `start` (excluded) to `end` (included)."""
    sign = 1 if end >= start else -1
    low, high = sorted((start, end))
    whole_weeks, rest = divmod((high - low).days, 7)
    count = whole_weeks * 5
    day = low + dt.timedelta(days=whole_weeks * 7)
    for _ in range(rest):
        day += dt.timedelta(days=1)
        if day.weekday() < 5:
            count += 1
    return sign * count


@tool
def days_between(start: str, end: str, business_days: bool = False) -> dict:
    """Counts the days from one date to another (negative if `end` is earlier).

    Args:
        start: The first date, as YYYY-MM-DD.
        end: The second date, as YYYY-MM-DD.
        business_days: Count only Monday to Friday.
    """
    first, last = _parse("start", start), _parse("end", end)
    days = _business_days(first, last) if business_days else (last - first).days
    return {"days": days, "weeks": round(days / (5 if business_days else 7), 2)}


@tool
def add_days(date: str, days: int, business_days: bool = False) -> dict:
    """Adds (or, if negative, subtracts) days to a date and names the weekday.

    Args:
        date: The date, as YYYY-MM-DD.
        days: How many days to add; negative to go back.
        business_days: Count only Monday to Friday (the result is never a weekend).
    """
    day = _parse("date", date)
    if not business_days:
        day += dt.timedelta(days=days)
    else:
        step = 1 if days >= 0 else -1
        left = abs(days)
        while left:
            day += dt.timedelta(days=step)
            if day.weekday() < 5:
                left -= 1
    if not dt.MINYEAR < day.year < dt.MAXYEAR:
        raise InvalidArguments("the result is outside the years 1 to 9999")
    return {"date": day.isoformat(), "weekday": WEEKDAYS[day.weekday()]}


@tool
def month_calendar(
    year: int, month: int, week_starts: Literal["monday", "sunday"] = "monday"
) -> Output:
    """Shows a month as a calendar grid and lists its weeks.

    Args:
        year: The year, e.g. 2026.
        month: The month, 1 to 12.
        week_starts: The first day of each week.
    """
    if not 1 <= month <= 12:
        raise InvalidArguments("`month` must be from 1 to 12")
    if not 1 <= year <= 9999:
        raise InvalidArguments("`year` must be from 1 to 9999")
    first = calendar.MONDAY if week_starts == "monday" else calendar.SUNDAY
    grid = calendar.TextCalendar(first).formatmonth(year, month)
    weeks = calendar.Calendar(first).monthdayscalendar(year, month)
    return Output(
        json={
            "month": calendar.month_name[month],
            "days": calendar.monthrange(year, month)[1],
            "weeks": [[day or None for day in week] for week in weeks],
        },
        parts=[Part.text(grid)],
    )


@tool
def weekdays_in_range(start: str, end: str, weekday: Weekday):
    """Streams every date between two dates (both included) that falls on a weekday.

    Args:
        start: The first date, as YYYY-MM-DD.
        end: The last date, as YYYY-MM-DD; at most ten years after `start`.
        weekday: The weekday, e.g. Friday.
    """
    first, last = _parse("start", start), _parse("end", end)
    if last < first:
        raise InvalidArguments("`end` is before `start`")
    if (last - first).days > 3660:
        raise InvalidArguments("the range is longer than ten years")
    target = WEEKDAYS.index(weekday)
    day = first + dt.timedelta(days=(target - first.weekday()) % 7)
    while day <= last:
        yield day.isoformat() + "\n"
        day += dt.timedelta(days=7)


from toolhost_guest.component import Tools  # noqa: E402,F401  (exports the tools)
