"""The control plane: the domain core (models, services, selectors, IAM, commands), its faces
(the JSON API, the admin, management commands) and the drivers."""
