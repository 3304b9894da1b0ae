"""Imports every feature's models so the metadata (and Alembic) sees all tables."""

from agent_broker.accounts.models import (  # noqa: F401
    Account,
    IdentityLink,
    SpentToken,
    WalletChallenge,
)
from agent_broker.certification.models import Certification, CertificationCheck  # noqa: F401
from agent_broker.db.base import Base  # noqa: F401
from agent_broker.deals.models import Deal  # noqa: F401
from agent_broker.domains.models import DomainClaim, DomainGrant, DomainGrantDay  # noqa: F401
from agent_broker.escrow.models import DealEscrow  # noqa: F401
from agent_broker.idempotency.models import IdempotencyRecord  # noqa: F401
from agent_broker.jobs.models import JobLease  # noqa: F401
from agent_broker.ledger.models import (  # noqa: F401
    ChainCheckpoint,
    ChainSeal,
    Hold,
    JournalEntry,
    LedgerAccount,
    Posting,
    StoredVerdict,
)
from agent_broker.listings.models import Listing  # noqa: F401
from agent_broker.meta.models import HealthSample  # noqa: F401
from agent_broker.payments.models import Invoice, ProcessorEvent, X402Payment  # noqa: F401
from agent_broker.reputation.models import ReputationFacet  # noqa: F401
from agent_broker.threads.models import Thread  # noqa: F401
from agent_broker.tokens.models import SigningKey  # noqa: F401
from agent_broker.webhooks.models import (  # noqa: F401
    AccountEvent,
    WebhookEndpoint,
    WebhookEvent,
)
