"""Why a reply was as slow as it was: ranked findings, each a cause with the measurement that shows it."""
