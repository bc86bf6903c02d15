"""Tools for development and for trying OCC without internet; nothing in the control plane imports them."""
