import sys

from relevancy.cli import main

sys.exit(main())
