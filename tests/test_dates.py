import datetime as dt

from memd.sources.dates import spoken_date


def test_a_date_is_said_as_strftime_says_it_in_the_c_locale():
    """Every day of 28 years (a whole cycle of weekdays and leap years) and some far
    ones, as ``%A, %-d %B %Y`` gives them."""
    days = [dt.date(2000, 1, 1) + dt.timedelta(n) for n in range(28 * 366)]
    days += [dt.date(1000, 1, 1), dt.date(1999, 12, 31), dt.date(9999, 12, 31)]
    for day in days:
        assert spoken_date(day.isoformat()) == f"{day:%A}, {day.day} {day:%B %Y}", day
    assert spoken_date("2023-05-25") == "Thursday, 25 May 2023"
