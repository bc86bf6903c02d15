"""Loopback fakes of outside services, speaking real HTTP."""
