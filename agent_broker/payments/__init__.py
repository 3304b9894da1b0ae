"""Money in: invoices through payment processors, their callbacks, the pay page."""
