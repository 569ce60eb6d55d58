import sys

from controller.daemon import main

sys.exit(main())
