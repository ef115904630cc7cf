import threading
import time

from memd.embed.turns import Turns


def waiting_for(turns: Turns, n: int) -> None:
    """Until ``n`` threads wait for a slot (generous: a loaded machine schedules late)."""
    deadline = time.monotonic() + 30
    while len(turns._waiting) < n:
        assert time.monotonic() < deadline, f"{len(turns._waiting)} of {n} threads waiting"
        time.sleep(0.005)


def test_waiting_threads_get_the_slot_in_the_order_they_asked():
    """Five threads that queue one after another for one slot take it in that order."""
    turns, order = Turns(1), []
    held = turns.take()

    def take(n: int) -> None:
        with turns.one():
            order.append(n)

    threads = []
    for n in range(5):
        threads.append(threading.Thread(target=take, args=(n,)))
        threads[-1].start()
        waiting_for(turns, n + 1)
    turns.give(held)
    for thread in threads:
        thread.join(30)
    assert order == [0, 1, 2, 3, 4]


def test_a_holder_that_asks_again_at_once_comes_after_the_thread_already_waiting():
    """The unfairness it exists for: with ``threading.Lock`` the releasing thread usually
    takes the lock straight back, and a waiting question could lose it again and again."""
    turns, order = Turns(1), []
    held = turns.take()

    def waiter() -> None:
        with turns.one():
            order.append("waiter")

    thread = threading.Thread(target=waiter)
    thread.start()
    waiting_for(turns, 1)
    turns.give(held)
    with turns.one():
        order.append("holder")
    thread.join(30)
    assert order == ["waiter", "holder"]


def test_two_slots_are_held_at_once_and_a_third_thread_gets_the_one_given_back():
    turns = Turns(2)
    first, second = turns.take(), turns.take()
    assert {first, second} == {0, 1}
    assert turns.take(blocking=False) is None
    got = []
    thread = threading.Thread(target=lambda: got.append(turns.take()))
    thread.start()
    waiting_for(turns, 1)
    turns.give(second)
    thread.join(30)
    assert got == [second]


def test_one_thread_at_a_time_keeps_using_the_same_slot():
    """A lone reader keeps to one engine: a second is made only when questions overlap."""
    turns = Turns(2)
    for _ in range(3):
        with turns.one() as slot:
            assert slot == 0
