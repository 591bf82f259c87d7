"""gradserve's HTTP layer: FastAPI app, wire codec, sessions, expressions, errors.

The service owns all state (sessions, names, limits); the engine owns all math.
``service.app.create_app`` builds the application.
"""
