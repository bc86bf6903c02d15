"""Typed commands: the inputs of the domain's services, defined once.

The API's request schemas are these models (camelCase on the wire), the console builds them
from its forms, and the worker rebuilds them from an admitted plan. Services receive them and
never see a wire dict or a JSON pointer; ``invalid_request`` is the one mapping from a
pydantic error to the documented ``INVALID_REQUEST``.
"""
