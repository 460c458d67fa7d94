"""`python -m metaquorum_pipeline`: the same as the `metaquorum-pipeline` command."""

import sys

from metaquorum_pipeline.cli import main

sys.exit(main())
