import sys

from slurmlet.controller.daemon import main

sys.exit(main())
