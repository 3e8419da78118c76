"""The order in which torch's autograd engine picks ready nodes, reproduced exactly.

torch's engine keeps the nodes that are ready to run in a `std::priority_queue` (its
ReadyQueue) ordered by sequence number, largest first. A leaf's AccumulateGrad (and a
NotImplemented node) has the largest possible number, so several of them that become ready
together tie, and which runs first is whatever libstdc++'s heap algorithm leaves on top: not
the order they were pushed in, and not Python's heapq order. When hooks have side effects
(an optimizer step in a post-accumulate hook reads other leaves' `.grad`), that order is
observable, so this module replays libstdc++'s `push_heap` and `pop_heap` (`__push_heap`,
`__adjust_heap`) step for step on the nodes' keys.
"""
from __future__ import annotations


class ReadyQueue:
    """A max-heap of (key, item) with std::priority_queue's exact tie order."""

    __slots__ = ("_heap",)

    def __init__(self):
        self._heap: list = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def push(self, key, item) -> None:
        """std::priority_queue::push: append, then sift up while the parent is strictly less."""
        heap = self._heap
        heap.append((key, item))
        _sift_up(heap, len(heap) - 1, 0, heap[-1])

    def pop(self):
        """std::priority_queue::pop of its top(): the item with the largest key."""
        heap = self._heap
        top = heap[0]
        last = heap.pop()
        if heap:
            _adjust_heap(heap, 0, len(heap), last)
        return top[1]


def _sift_up(heap: list, hole: int, top: int, value) -> None:
    """libstdc++'s __push_heap: move `value` up from `hole` while its parent's key is less."""
    parent = (hole - 1) // 2
    while hole > top and heap[parent][0] < value[0]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def _adjust_heap(heap: list, hole: int, length: int, value) -> None:
    """libstdc++'s __adjust_heap (pop_heap's): move the hole at `hole` down to a leaf, always
    to the larger child (the right one on a tie), then sift `value` up from there."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if heap[child][0] < heap[child - 1][0]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _sift_up(heap, hole, top, value)
