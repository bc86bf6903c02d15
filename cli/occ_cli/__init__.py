"""``occ``: the command line for OCC's JSON API, and the OpenClaw TUI of a deployed Agent.

A face that knows OCC only over HTTP (``x-api-key``); it imports nothing of OCC's server.
"""
