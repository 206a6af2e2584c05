"""The Streamlit review app and (later) the Label Studio sync. Only flows/ imports this."""
