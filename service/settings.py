"""Service configuration from ``GRADSERVE_*`` environment variables.

``get_settings`` reads the environment once (cached); ``create_app(settings)``
keeps the settings on the app and routes receive them through the ``SettingsDep``
dependency, so tests build apps with their own settings.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    """Limits, auth and server options; every field reads ``GRADSERVE_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="GRADSERVE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    max_sessions: int = Field(default=1000, ge=1, description="sessions held at once (429 beyond)")
    key_max_sessions: int = Field(
        default=100,
        ge=1,
        description="sessions one API key may hold at once (429 beyond), so "
        "one key cannot lock out another (with GRADSERVE_API_KEYS)",
    )
    request_seconds: float = Field(
        default=60.0,
        gt=0,
        description="a request's deadline: work past it stops at the next "
        "op, is rolled back and answers 503 deadline_exceeded",
    )
    max_tensor_elements: int = Field(
        default=16_000_000,
        ge=1,
        description="elements in one tensor, checked before allocation (413)",
    )
    max_session_bytes: int = Field(
        default=512 * 2**20,
        ge=1,
        description="bytes a session holds: tensors, grads and what its graph saved (507)",
    )
    key_max_bytes: int = Field(
        default=2 * 2**30,
        ge=1,
        description="bytes the sessions of one API key hold together (507), so one key "
        "cannot take the memory of another (with GRADSERVE_API_KEYS)",
    )
    max_total_bytes: int = Field(
        default=8 * 2**30,
        ge=1,
        description="bytes all sessions hold together: tensors, grads, saved graphs (507)",
    )
    max_body_bytes: int = Field(default=64 * 2**20, ge=1, description="request body size (413)")
    max_json_values: int = Field(
        default=2_000_000,
        ge=1,
        description="values (numbers, strings, lists) in one JSON body, counted before it is "
        "parsed (413): parsed JSON costs ~30x its size; large tensors go as base64 or bytes",
    )
    max_batch_steps: int = Field(default=10_000, ge=1, description="steps in one batch (413)")
    max_repeat: int = Field(
        default=100_000, ge=1, description="iterations of one program run (413 beyond)"
    )
    max_programs: int = Field(
        default=100, ge=1, description="programs stored in one session (429 beyond)"
    )
    max_expr_length: int = Field(
        default=4096, ge=1, description="characters in one expression (422)"
    )
    session_ttl_seconds: float = Field(
        default=3600.0, gt=0, description="idle time after which a session is evicted"
    )
    api_keys: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="comma-separated bearer keys; empty disables auth"
    )
    sweep_seconds: float = Field(
        default=60.0, gt=0, description="how often a background task evicts idle sessions"
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="comma-separated origins (or '*') that may call the API from a web page; "
        "empty disables CORS",
    )
    log_level: Literal["critical", "error", "warning", "info", "debug"] = "info"
    access_log: bool = False
    read_seconds: float = Field(
        default=30.0,
        gt=0,
        description="time a client has to send a whole request, from "
        "connecting or from the previous answer (slow and half-open clients are cut)",
    )
    keep_alive_seconds: float = Field(
        default=5.0, gt=0, description="idle time after which a keep-alive connection is closed"
    )
    max_connections: int = Field(
        default=1000, ge=1, description="connections and requests served at once (503 beyond)"
    )
    work_per_second: float = Field(
        default=2e9,
        gt=0,
        description="multiply-adds counted per second of GRADSERVE_REQUEST_SECONDS: an op "
        "whose one numpy call (a matrix factorization) is estimated at more than the "
        "deadline allows is refused (413) before it runs",
    )
    offload_elements: int = Field(
        default=65_536, ge=0, description="work above this many elements runs in a worker thread"
    )

    store: str = Field(
        default="memory",
        description="where sessions live: memory, sqlite:///path or redis://host:port/db",
    )
    journal_max_bytes: int = Field(
        default=256 * 2**20,
        ge=1,
        description="journal bytes a session may hold past its last checkpoint; beyond it "
        "the graphs are dropped (later backward through them: 409 graph_lost)",
    )
    checkpoint_records: int = Field(
        default=1000, ge=1, description="records after which a checkpoint is attempted"
    )
    lease_seconds: float = Field(
        default=5.0, gt=0, le=10, description="how long a replica holds a session (redis)"
    )

    @field_validator("api_keys", "cors_origins", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_level(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings from the environment, read once."""
    return Settings()
