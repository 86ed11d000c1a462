"""The agent: one game protocol (``protocol``), the Q-network (``network``), PQN training (``train``) and the
shipped default agent (``shipped``: packaging, evaluation, fixed states)."""
