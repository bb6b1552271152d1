"""`--where`: which episodes of a dataset, as a condition on their catalog columns, compiled to SQL.

A small language parsed by hand, so that nothing a user types ever becomes SQL: the fields are a fixed list
mapped to catalog columns, every value goes into the statement as a `?` parameter, and anything else is one line
saying at which column the query stopped making sense. Keywords and field names are case-insensitive; values are
not (task names are what the operator typed)::

    query      := or_expr
    or_expr    := and_expr ('or' and_expr)*
    and_expr   := not_expr ('and' not_expr)*
    not_expr   := 'not' not_expr | '(' or_expr ')' | condition
    condition  := FIELD OP value
                | FIELD ['not'] 'in' '(' value (',' value)* ')'
                | FIELD 'is' ['not'] 'empty'
    OP         := '=' | '==' | '!=' | '<' | '<=' | '>' | '>='
    value      := 'text' | "text" | bare_word | number

A bare word is letters, digits and `_ - . : / +` (`outcome = success`, `id = 2026-03-02_10-15-00`); text with
anything else (a space) is quoted, a quote inside doubled ('it''s'). Numbers compare with the numeric fields
(score, duration_s, ...); duration_s also takes a duration (`duration > 30s`), start_ns and stop_ns a time
(`start_ns >= 2026-03-02`). The text fields compare alphabetically with `<` (an id starts with when it was recorded);
the labels with a fixed vocabulary (outcome, status, mode, state, reviewed_outcome) take only `=`, `!=`, `in` and
`is empty`, and a value outside their vocabulary is refused.

Every condition is true or false, never SQL's unknown: an episode without a score is neither `score < 0.8` nor
`score >= 0.8`, and it is `score != 0.8` and `not score < 0.8` (so `not` means what it says).

Hostile text is bounded: at most MAX_LENGTH characters, MAX_DEPTH parentheses and `not`s nested as written, and
MAX_SQL_NESTING levels in the SQL made of it (below what SQLite's parser takes), each refused in one line.

Why one module: the field table, the tokens and the grammar are one small language; apart, a field's rules (its
vocabulary, its unit) would sit away from the one place that applies them.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NoReturn

from ros_robodata.dataset.annotations import DISPUTED
from ros_robodata.dataset.catalog import LIFECYCLE_STATES
from ros_robodata.dataset.label import VERDICTS
from ros_robodata.errors import RobodataError
from ros_robodata.vocabulary import MODES, OUTCOMES, STATUSES, parse_duration, parse_time

MAX_LENGTH = 2000  # characters: a query longer than this is a file pasted by mistake, or an attack
MAX_DEPTH = 50  # parentheses and `not`s as written: past what anyone writes, far below Python's recursion limit
# parentheses nested in the SQL made of it (an and inside an or inside a not...): SQLite's parser stack (100 entries)
# overflows near 30 of them in the worst shape, as "parser stack overflow" from the catalog
MAX_SQL_NESTING = 24

Value = str | int | float

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class QueryField:
    """A field a query may name: the catalog column it reads, and what its values are.

    Args:
        column: the catalog column (a name from this module, never from the user).
        number: its values are numbers (else text).
        vocabulary: the only values it takes, when it is a label with a fixed vocabulary; () for any text.
        ordered: `<`, `<=`, `>`, `>=` make sense on it (not for a label).
        unit: how a value that is not a plain number is read: 'duration' (seconds), 'time' (ns since the epoch).
    """

    column: str
    number: bool = False
    vocabulary: tuple[str, ...] = ()
    ordered: bool = True
    unit: str = ''


FIELDS: dict[str, QueryField] = {
    'id': QueryField('id'),
    'task': QueryField('task'),
    'operator': QueryField('operator'),
    'mode': QueryField('mode', vocabulary=MODES, ordered=False),
    'robot': QueryField('robot'),
    'outcome': QueryField('outcome', vocabulary=OUTCOMES, ordered=False),
    'status': QueryField('status', vocabulary=STATUSES, ordered=False),
    # the lifecycle state (recorded, scored, reviewed, approved, rejected, released, retired), computed by the catalog
    'state': QueryField('state', vocabulary=LIFECYCLE_STATES, ordered=False),
    'score': QueryField('score', number=True),
    'duration_s': QueryField('duration_s', number=True, unit='duration'),
    'start_ns': QueryField('start_ns', number=True, unit='time'),
    'stop_ns': QueryField('stop_ns', number=True, unit='time'),
    'message_count': QueryField('message_count', number=True),
    'size_bytes': QueryField('size_bytes', number=True),
    'reviewed_outcome': QueryField('reviewed_outcome', vocabulary=(*VERDICTS, DISPUTED), ordered=False),
    'source_id': QueryField('source_id'),
    'review_rank': QueryField('review_rank', number=True),
}
ALIASES = {'episode': 'id', 'duration': 'duration_s', 'messages': 'message_count', 'reviewed': 'reviewed_outcome'}
KEYWORDS = frozenset({'and', 'or', 'not', 'in', 'is'})  # never a field, never a bare value (quote it)
OPERATORS = {'=': '=', '==': '=', '!=': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>='}
EXAMPLE = 'score < 0.8 and outcome = success'

_NUMBER = re.compile(r'[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?')
_INTEGER = re.compile(r'[-+]?[0-9]+')
_WORD_EXTRA = frozenset('_-.:/+')


@dataclass(frozen=True)
class EpisodeQuery:
    """A `--where` query compiled: a WHERE fragment whose only words are catalog columns and SQL's own, and the
    values for its `?` placeholders.

    Args:
        text: the query as the user wrote it.
        sql: the fragment, for `Catalog.query(sql, params)`.
        params: the values, in placeholder order.
        columns: the catalog columns it reads.
        names_discarded: it compares status with 'discarded' or 'retired', or state with 'retired' (then the
            episodes hidden first, discarded and retired, are not).
    """

    text: str
    sql: str
    params: tuple[Value, ...]
    columns: frozenset[str]
    names_discarded: bool


def field_names() -> list[str]:
    """Every name a query may use for a field: the fields, then the aliases."""
    return [*FIELDS, *ALIASES]


@lru_cache(maxsize=64)
def compile_query(text: str) -> EpisodeQuery:
    """`text` as a WHERE fragment with `?` placeholders, or one line saying where it stopped making sense.

    Args:
        text: the query, e.g. ``score < 0.8 and outcome = success``.

    Raises:
        RobodataError: not a query (empty, longer than MAX_LENGTH, nested deeper than MAX_DEPTH or
            MAX_SQL_NESTING, a character or a word where it cannot be, an unknown field, a value its field does not
            take); one line naming the column.
    """
    if not isinstance(text, str):
        raise RobodataError(f'--where: a query is text, not {type(text).__name__}')
    if len(text) > MAX_LENGTH:
        raise RobodataError(f'--where: {len(text):,} characters, more than {MAX_LENGTH:,}: a query is a condition '
                            f'such as {EXAMPLE!r}')
    if not text.strip():
        raise RobodataError(f'--where: empty: give a condition such as {EXAMPLE!r}')
    return _Parser(text).parse()


_Sql = tuple[str, int]  # a rule's SQL, and how deep parentheses nest in it


def _for_sqlite(value: float) -> Value:
    """An integer SQLite can hold (64 bits) as it is; a larger one as a float, which compares the same way."""
    return value if not isinstance(value, int) or -INT64_MAX - 1 <= value <= INT64_MAX else float(value)


def _nesting(sql: str) -> int:
    deepest = level = 0
    for c in sql:
        level += (c == '(') - (c == ')')
        deepest = max(deepest, level)
    return deepest


# -- the tokens ------------------------------------------------------------------------------------------------

_WORD, _TEXT, _NUM, _OP, _OPEN, _CLOSE, _COMMA, _END = 'word', 'text', 'number', 'op', '(', ')', ',', 'end'


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str  # as written for a word, number or operator; the value for quoted text
    column: int  # 1-based, where it starts

    @property
    def key(self) -> str:
        """A bare word as a keyword or field name: case-insensitive."""
        return self.text.lower() if self.kind == _WORD else ''


class _Parser:
    """Recursive descent over the tokens, building the SQL as it goes: one method per rule of the grammar."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[_Token] = []
        self.at = 0
        self.params: list[Value] = []
        self.columns: set[str] = set()
        self.names_discarded = False

    # -- errors

    def fail(self, column: int, what: str) -> NoReturn:
        shown = ''.join(' ' if c.isspace() else c for c in self.text)  # one line, columns kept
        if len(shown) <= 100:
            where = f'--where {shown!r}: column {column}'
        else:
            where = f'--where ({len(shown):,} characters): column {column:,} (at {shown[column - 1:column + 19]!r})'
        raise RobodataError(f'{where}: {what}')

    @staticmethod
    def said(token: _Token) -> str:
        if token.kind == _END:
            return 'the end of the query'
        if token.kind == _TEXT:
            return f'the text {token.text!r}'
        return repr(token.text)

    # -- tokens

    def tokenize(self) -> None:
        text, i, n = self.text, 0, len(self.text)
        while i < n:
            c = text[i]
            if c.isspace():
                i += 1
            elif c in '()':
                self.tokens.append(_Token(c, c, i + 1))
                i += 1
            elif c == ',':
                self.tokens.append(_Token(_COMMA, c, i + 1))
                i += 1
            elif c in '=!<>':
                two = text[i:i + 2]
                if two == '<>':
                    self.fail(i + 1, "'<>' is written != here")
                op = two if two in OPERATORS else c
                if op not in OPERATORS:
                    self.fail(i + 1, f"'{c}' alone is no comparison: write = != < <= > or >=")
                self.tokens.append(_Token(_OP, op, i + 1))
                i += len(op)
            elif c in '\'"':
                i = self._quoted(i)
            elif c.isalnum() or c in _WORD_EXTRA:
                start = i
                while i < n and (text[i].isalnum() or text[i] in _WORD_EXTRA):
                    i += 1
                word = text[start:i]
                self.tokens.append(_Token(_NUM if _NUMBER.fullmatch(word) else _WORD, word, start + 1))
            else:
                shown = repr(c) if c.isprintable() else f'the character U+{ord(c):04X}'
                self.fail(i + 1, f'{shown} has no meaning in a query (it is made of fields, = != < <= > >=, in, '
                                 'is empty, and, or, not, parentheses, quoted text and numbers)')
        self.tokens.append(_Token(_END, '', n + 1))

    def _quoted(self, i: int) -> int:
        quote, text, start = self.text[i], self.text, i
        parts = []
        i += 1
        while True:
            end = text.find(quote, i)
            if end < 0:
                self.fail(start + 1, f'the text opened with {quote} here is never closed')
            parts.append(text[i:end])
            if text.startswith(quote, end + 1):  # doubled: the quote itself
                parts.append(quote)
                i = end + 2
                continue
            break
        value = ''.join(parts)
        if any(not c.isprintable() and not c.isspace() for c in value):
            self.fail(start + 1, 'the quoted text holds a control character')
        self.tokens.append(_Token(_TEXT, value, start + 1))
        return end + 1

    def peek(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        token = self.tokens[self.at]
        if token.kind != _END:
            self.at += 1
        return token

    # -- the grammar

    def parse(self) -> EpisodeQuery:
        try:
            self.text.encode('utf-8')
        except UnicodeEncodeError as err:
            self.fail(err.start + 1, 'not text (a lone surrogate character)')
        self.tokenize()
        sql, _ = self.or_expr(0)
        last = self.peek()
        if last.kind != _END:
            if last.kind == _CLOSE:
                self.fail(last.column, "')' closes no '('")
            hint = ''
            if last.kind in (_WORD, _TEXT, _NUM) and last.key not in KEYWORDS:
                hint = " (text with spaces is quoted: task = 'pick cube')"
            self.fail(last.column, f'expected and, or or the end of the query, found {self.said(last)}{hint}')
        return EpisodeQuery(self.text, sql, tuple(self.params), frozenset(self.columns), self.names_discarded)

    # Each rule returns its SQL and how deep parentheses nest in it (its only parentheses are the templates' own:
    # every value is a placeholder), checked against MAX_SQL_NESTING where it grows.

    def nested(self, sql: str, nesting: int, start: _Token) -> _Sql:
        if nesting > MAX_SQL_NESTING:
            self.fail(start.column, f'nested too deep: the groups from here on (parentheses, not, and inside or) '
                                    f'nest more than {MAX_SQL_NESTING} levels')
        return sql, nesting

    def or_expr(self, depth: int) -> _Sql:
        start = self.peek()
        parts = [self.and_expr(depth)]
        while self.peek().key == 'or':
            self.take()
            parts.append(self.and_expr(depth))
        if len(parts) == 1:
            return parts[0]
        return self.nested('(' + ' OR '.join(p[0] for p in parts) + ')', 1 + max(p[1] for p in parts), start)

    def and_expr(self, depth: int) -> _Sql:
        start = self.peek()
        parts = [self.not_expr(depth)]
        while self.peek().key == 'and':
            self.take()
            parts.append(self.not_expr(depth))
        if len(parts) == 1:
            return parts[0]
        return self.nested('(' + ' AND '.join(p[0] for p in parts) + ')', 1 + max(p[1] for p in parts), start)

    def not_expr(self, depth: int) -> _Sql:
        token = self.peek()
        if token.key == 'not' or token.kind == _OPEN:
            if depth >= MAX_DEPTH:
                self.fail(token.column, f'nested deeper than {MAX_DEPTH} (parentheses and not)')
            self.take()
            if token.kind == _OPEN:
                group = self.or_expr(depth + 1)
                close = self.take()
                if close.kind != _CLOSE:
                    self.fail(close.column, f"expected ')' to close the '(' at column {token.column}, found "
                                            f'{self.said(close)}')
                return group  # the SQL has its own parentheses where it needs them
            inner, nesting = self.not_expr(depth + 1)
            return self.nested(f'NOT ({inner})', nesting + 1, token)
        leaf = self.condition()
        return self.nested(leaf, _nesting(leaf), token)

    def condition(self) -> str:
        token = self.take()
        field = self.field(token)
        self.columns.add(field.column)
        column = field.column if field.number else f"coalesce({field.column}, '')"
        name = token.text.lower()
        op = self.take()
        if op.kind == _OP:
            sign = OPERATORS[op.text]
            if sign not in ('=', '!=') and not field.ordered:
                self.fail(op.column, f'{name} is a label: compare it with =, !=, in or is empty, not {op.text}')
            self.params.append(self.value(field, name, op.text))
            if not field.number:
                return f'{column} {sign} ?'
            return f'coalesce({column} {sign} ?, {1 if sign == "!=" else 0})'  # no score: != 0.8, not < 0.8
        negate = op.key == 'not'
        if negate:
            op = self.take()
            if op.key != 'in':
                self.fail(op.column, f"expected in after '{name} not', found {self.said(op)}")
        if op.key == 'in':
            opened = self.take()
            if opened.kind != _OPEN:
                self.fail(opened.column, f"expected '(' after in, found {self.said(opened)}: {name} in (a, b)")
            first = len(self.params)
            while True:
                self.params.append(self.value(field, name, 'in'))
                after = self.take()
                if after.kind == _CLOSE:
                    break
                if after.kind != _COMMA:
                    self.fail(after.column, f"expected ',' or ')' in the list of {name} values, found "
                                            f'{self.said(after)}')
            marks = ', '.join(['?'] * (len(self.params) - first))
            test = f'{column} IN ({marks})' if not field.number else f'coalesce({column} IN ({marks}), 0)'
            return f'NOT ({test})' if negate else test
        if op.key == 'is':
            word = self.take()
            empty_negated = word.key == 'not'
            if empty_negated:
                word = self.take()
            if word.key != 'empty':
                self.fail(word.column, f"expected empty after '{name} is{' not' if empty_negated else ''}', found "
                                       f'{self.said(word)}')
            test = f'{field.column} IS NULL' if field.number else f"{column} = ''"
            return f'NOT ({test})' if empty_negated else test
        self.fail(op.column, f'expected = != < <= > >=, in or is empty after {name}, found {self.said(op)}')

    def field(self, token: _Token) -> QueryField:
        if token.kind != _WORD or token.key in KEYWORDS:
            self.fail(token.column, f'expected a field ({", ".join(FIELDS)}), found {self.said(token)}')
        name = ALIASES.get(token.key, token.key)
        if name in FIELDS:
            return FIELDS[name]
        close = difflib.get_close_matches(token.key, field_names(), n=1, cutoff=0.6)
        maybe = f' (did you mean {close[0]}?)' if close else ''
        self.fail(token.column, f'no field {token.text!r}{maybe}: the fields are {", ".join(FIELDS)} (and '
                                f'{", ".join(f"{a} for {b}" for a, b in ALIASES.items())})')

    def value(self, field: QueryField, name: str, after: str) -> Value:
        token = self.take()
        if token.kind not in (_WORD, _TEXT, _NUM) or token.key in KEYWORDS:
            self.fail(token.column, f"expected a value after '{name} {after}', found {self.said(token)}"
                      + (" (quote a value that is a keyword: 'in')" if token.key in KEYWORDS else ''))
        if field.number:
            return self.number(field, name, token)
        if field.vocabulary and token.text not in field.vocabulary:
            empty = f' ({name} is empty picks the episodes without one)' if not token.text else ''
            self.fail(token.column, f'{name} {token.text!r} is not one of {", ".join(field.vocabulary)}{empty}')
        if (field.column == 'status' and token.text in ('discarded', 'retired')) or \
                (field.column == 'state' and token.text == 'retired'):
            self.names_discarded = True  # what is hidden first is then what the user asks for
        return token.text

    def number(self, field: QueryField, name: str, token: _Token) -> Value:
        text = token.text.strip()
        if _NUMBER.fullmatch(text):
            value: float = int(text) if _INTEGER.fullmatch(text) else float(text)
            if math.isfinite(value):
                return _for_sqlite(value)
            self.fail(token.column, f'{name}: {token.text!r} is too large a number')
        where = f'--where {name}'
        try:
            if field.unit == 'duration':
                return parse_duration(text, where, allow_zero=True) / 1e9
            if field.unit == 'time':
                return _for_sqlite(parse_time(text, 0, where))  # after 2262 in ns is past SQLite's integers
        except RobodataError:
            pass
        takes = {'duration': 'a number of seconds or a duration (30s, 2min)',
                 'time': 'a number (ns since the epoch) or a time (2026-03-02, 2026-03-02T10:15:00Z)'}
        self.fail(token.column, f'{name} takes {takes.get(field.unit, "a number")}, not {token.text!r}')
