"""rtreport's measuring side: the game protocol, the agent, runners and `rtreport collect`."""
