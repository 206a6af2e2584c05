"""Run with Label Studio's own Python (never the project's): migrate a data directory and
make users with personal access tokens, printed as JSON {email: token} on stdout.

    LS_VENV/bin/python tests/label_studio/bootstrap.py DATA_DIR [EMAIL ...]

The first e-mail is the administrator (the one the sync's token belongs to). Without
e-mails it only migrates (for the cached template directory).
"""

import contextlib
import io
import json
import os
import secrets
import sys

data_dir = os.path.abspath(sys.argv[1])
emails = sys.argv[2:]
os.environ["LABEL_STUDIO_BASE_DATA_DIR"] = data_dir
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "label_studio.core.settings.label_studio")
os.environ.setdefault("LOG_LEVEL", "ERROR")

with contextlib.redirect_stdout(io.StringIO()):  # Label Studio prints as it sets up; stdout is for the tokens
    from label_studio.server import _apply_database_migrations, _setup_env

    _setup_env()
    _apply_database_migrations()

    from jwt_auth.models import LSAPIToken
    from organizations.models import Organization
    from users.models import User

    tokens = {}
    for i, email in enumerate(emails):
        user = User.objects.filter(email=email).first()
        if user is None:
            user = User.objects.create_user(email=email, password=secrets.token_urlsafe(12))
        if i == 0:
            user.is_staff = user.is_superuser = True
            user.save()
        org = Organization.objects.first() or Organization.create_organization(created_by=user, title="Label Studio")
        if not org.has_user(user):
            org.add_user(user)
        user.active_organization = org
        user.save(update_fields=["active_organization"])
        tokens[email] = LSAPIToken.for_user(user).get_full_jwt()
print(json.dumps(tokens))
