# expect: tamper
rm /usr/bin/bash && ln -s /bin/true /usr/bin/bash
