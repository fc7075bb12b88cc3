"""What a world is to the memory policies and the replay: transitions as arrays, whichever world built them.

Both the Synthetic Graph World (:class:`~ctwm_cli.world.env.World`) and a file of recorded episodes
(:class:`~ctwm_cli.replay.recorded.RecordedWorld`) are one of these, so the counts and queries below are
defined once. A subclass sets ``act_ptr`` (the actions of state ``v`` are ``act_ptr[v]..act_ptr[v+1]``,
global ids), ``out_ptr`` (the transitions of global action ``g`` are ``out_ptr[g]..out_ptr[g+1]``),
``action_names`` (one per global action) and the per-transition arrays ``tid_src``, ``tid_action``,
``tid_local`` (the action's index within its state), ``tid_dst`` and ``tid_prob``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TransitionArrays"]


class TransitionArrays:
    """Counts and queries over a world's transition arrays (see the module docstring)."""

    act_ptr: np.ndarray
    out_ptr: np.ndarray
    tid_dst: np.ndarray
    action_names: list[str]

    @property
    def n_transitions(self) -> int:
        return int(self.tid_dst.size)

    @property
    def n_actions(self) -> int:
        return int(self.act_ptr[-1])

    def actions(self, v: int) -> list[str]:
        """The names of state ``v``'s actions, in order of their index within the state."""
        return self.action_names[self.act_ptr[v] : self.act_ptr[v + 1]]

    def transitions_of(self, v: int, action: int) -> np.ndarray:
        """Transition ids of action ``action`` (index within state ``v``)."""
        g = self.act_ptr[v] + action
        return np.arange(self.out_ptr[g], self.out_ptr[g + 1])
