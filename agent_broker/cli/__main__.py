"""`python -m agent_broker.cli`, as the agent-broker command."""

import sys

from agent_broker.cli import main

sys.exit(main())
