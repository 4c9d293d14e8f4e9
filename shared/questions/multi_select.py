"""Multi-select questions: any subset of 2..64 named items, one report at the question's ε."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from deniable.shared.errors import shown
from deniable.shared.mechanisms import MAX_ITEMS, ItemRandomizedResponse, Mechanism, Tally
from deniable.shared.questions._base import Answer, QuestionType, register_question_type
from deniable.shared.questions.categorical import MAX_OPTION_TEXT
from deniable.shared.wire.v1 import aggregator_pb2 as pb

__all__ = ["MULTI_SELECT", "NONE_ANSWER", "MultiSelect", "chosen_items"]

NONE_ANSWER = "none"
"""The answer naming the empty set (as does an empty answer); no item may be called so."""


def chosen_items(mask: int, names: Sequence[str]) -> list[str]:
    """The names of the items a true answer (a mask, bit i: item i) chose.

    Example:
        >>> chosen_items(0b101, ["a", "b", "c"])
        ['a', 'c']
    """
    return [name for index, name in enumerate(names) if mask >> index & 1]


class MultiSelect(QuestionType):
    """A multi-select question (``Question.multi_select``): any subset of its items.

    A true answer is an integer mask, bit i set when item i is chosen (0: none). The whole
    set is one report at the question's ε, split evenly over the items (ε/k each).

    Example:
        >>> question = pb.Question(multi_select=pb.MultiSelectQuestion(items=["a", "b", "c"]))
        >>> MULTI_SELECT.parse_answer("A, c", question), MULTI_SELECT.parse_answer("", question)
        (5, 0)
    """

    name: ClassVar[str] = "multi_select"
    label: ClassVar[str] = "multi-select"
    spec_keys: ClassVar[frozenset[str]] = frozenset({"items", "epsilon", "mechanism"})

    def domain(self, item: Mapping[str, Any]) -> pb.MultiSelectQuestion:
        """The ``items``: a list of strings."""
        items = item.get("items")
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError("'items' must be a list of strings")
        if not 2 <= len(items) <= MAX_ITEMS:
            raise ValueError(f"'items' must list 2..{MAX_ITEMS} items, got {len(items)}")
        return pb.MultiSelectQuestion(items=items)

    def domain_args(self, question: pb.Question) -> tuple[Any, ...]:
        """(k,): the number of items."""
        return (len(question.multi_select.items),)

    def domain_fields(self, mechanism: Mechanism) -> dict[str, Any]:
        """``k``, the number of items."""
        return {"k": cast(ItemRandomizedResponse, mechanism).k}

    def question_for(self, mechanism: Mechanism, names: Sequence[str] = ()) -> pb.Question:
        """A question with the mechanism's k items, named ``names`` or ``0``..``k−1``."""
        k = cast(ItemRandomizedResponse, mechanism).k
        items = list(names) or [str(v) for v in range(k)]
        return pb.Question(
            multi_select=pb.MultiSelectQuestion(items=items), mechanism=mechanism.to_message()
        )

    def check(self, question: pb.Question, where: str) -> None:
        """2..64 distinct items of 1..200 characters, without commas, none called "none"."""
        items = list(question.multi_select.items)
        field = f"{where}.multi_select.items"
        if not 2 <= len(items) <= MAX_ITEMS:
            raise ValueError(f"{field}: need 2..{MAX_ITEMS} items, got {len(items)}")
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not item.strip() or len(item) > MAX_OPTION_TEXT:
                raise ValueError(f"{field}[{index}]: must be 1..{MAX_OPTION_TEXT} characters")
            if "," in item:
                raise ValueError(
                    f"{field}[{index}]: {shown(item)} contains a comma (answers list items "
                    "separated by commas)"
                )
            key = item.strip().lower()
            if key == NONE_ANSWER:
                raise ValueError(
                    f"{field}[{index}]: {shown(item)} is reserved (the answer 'none' means no item)"
                )
            if key in seen:
                raise ValueError(f"{field}[{index}]: duplicate item {shown(item)}")
            seen.add(key)

    def parse_answer(self, text: str, question: pb.Question) -> Answer:
        """Items by name (any case) or number from 1, comma-separated; "" or "none": none."""
        items = [item.strip().lower() for item in question.multi_select.items]
        value = text.strip()
        if not value or value.lower() == NONE_ANSWER:
            return 0
        mask = 0
        for part in value.split(","):
            name = part.strip().lower()
            if name in items:
                index = items.index(name)
            elif name.isdigit() and 1 <= int(name) <= len(items):
                index = int(name) - 1
            else:
                raise ValueError(
                    f"answer must be {self.answer_hint(question)}, got {text!r} "
                    f"({part.strip()!r} is not an item)"
                )
            mask |= 1 << index
        return mask

    def answer_hint(self, question: pb.Question) -> str:
        """``item names or numbers 1..k separated by commas, or none``."""
        k = len(question.multi_select.items)
        return f"item names or numbers 1..{k} separated by commas, or 'none'"

    def placeholder(self, question: pb.Question) -> str:
        """``ITEM,ITEM``."""
        return "ITEM,ITEM"

    def prompt_lines(self, question: pb.Question) -> list[str]:
        """The items, numbered from 1, and how to answer."""
        lines = [f"{n:>4}. {item}" for n, item in enumerate(question.multi_select.items, 1)]
        return [*lines, "      Choose any: names or numbers separated by commas, or 'none'."]

    def given_pair(self, question: pb.Question, given: str, item: str) -> tuple[int, int]:
        """The indices of the items named ``given`` and ``item`` (any case), which differ."""
        items = [name.strip().lower() for name in question.multi_select.items]
        pair: list[int] = []
        for field, name in (("given", given), ("item", item)):
            if not name:
                raise ValueError(f"{field}: missing (give both given and item, or neither)")
            if name.strip().lower() not in items:
                raise ValueError(
                    f"{field}: {shown(name)} is not an item of question {question.id!r} "
                    f"(items: {', '.join(question.multi_select.items)})"
                )
            pair.append(items.index(name.strip().lower()))
        if pair[0] == pair[1]:
            raise ValueError(f"item: {shown(item)} is the given item; name another one")
        return pair[0], pair[1]

    def conditional(
        self,
        question: pb.Question,
        mechanism: Mechanism,
        tally: Tally,
        pair: tuple[int, int],
        confidence: float,
    ) -> pb.ConditionalEstimate:
        """Among those who chose ``pair[0]``, the share who chose ``pair[1]``."""
        share = cast(ItemRandomizedResponse, mechanism).conditional(tally, *pair, confidence)
        return share.wire(list(question.multi_select.items))

    def describe(self, question: pb.Question) -> str:
        """``any of [a, b, c], item_rr, epsilon = E (exact) in total, E/k per item``."""
        items = ", ".join(question.multi_select.items)
        name = question.mechanism.registered.name or question.mechanism.WhichOneof("kind")
        k = len(question.multi_select.items)
        epsilon = question.privacy.epsilon
        return (
            f"any of [{items}], {name}, epsilon = {epsilon:.4f} (exact) in total, "
            f"{epsilon / k:.4f} per item"
        )


MULTI_SELECT = register_question_type(MultiSelect())
