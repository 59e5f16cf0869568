FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm chromium gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /srv/stepscope
COPY pyproject.toml package.json ./
COPY app ./app
RUN pip install --no-cache-dir -e . && npm install --no-audit --no-fund --loglevel=error
# the simulations' hot modules compiled by mypyc (docs/native.md); pure Python if this fails
COPY scripts/build_native.py ./scripts/
RUN python scripts/build_native.py
COPY templates ./templates
COPY static ./static
COPY content ./content
ENV APP_DATABASE_URL=sqlite:////data/stepscope.db
VOLUME /data
EXPOSE 8000
CMD ["sh", "-c", "python -m app.store.migrate && uvicorn app.main:app --host 0.0.0.0 --port 8000"]
