"""The agents' runtime: one worker per agent, turns, tools, bookings."""
