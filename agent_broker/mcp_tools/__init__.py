"""The MCP server: one tool per agent operation, over stdio and streamable HTTP."""
