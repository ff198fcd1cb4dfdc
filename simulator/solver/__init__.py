"""Budget solver: the fewest per-op changes that bring a state (preset + overrides) within a budget.

The option table's cells are not independent: a change adds or removes format conversions and partition
crossings on the op's edges. Candidate changes are priced with the totals rule's own per-edge terms
(`simulator.totals.edge_terms`, and `EdgeRule`: the same terms over many edges at once, to the bit) and every
proposal's totals come from `simulator.totals.totals` itself, so what the solver reports is what the browser and
`edgescope predict` compute for that state.

Search: a lazy greedy that takes, op by op, the change that removes most budget excess per unit of the
objective's cost (an op touched, an op made non-float), with exact local re-pricing on each pop; then a pruning
pass that reverts every change the budget does not need. It runs from the current state and from the presets'
columns (an int8 island pays no conversions inside it, which single changes from the current state cannot see),
and the best feasible outcome per objective is proposed. Pure: no I/O.

The modules, in the order the data flows: `budget` (the limits and the excess), `table` (the option table as
arrays, built once per stored analysis), `edges` (many ops' edges priced as arrays), `state` (a state's tracked
figures and the pricing of one op's choice),
`candidates` (scores and bounds of changes), `search` (the phases: repair, prune, exchange, shrink, starts) and
`proposals` (the solve: starts, ranking per objective, proposals with the totals rule's totals).
"""

from .budget import Budget
from .proposals import OBJECTIVES, Change, Proposal, Solution, solution_json, solve
from .table import SolverTable, is_float_combo, prepare

__all__ = ["OBJECTIVES", "Budget", "Change", "Proposal", "Solution", "SolverTable", "is_float_combo", "prepare",
           "solution_json", "solve"]
