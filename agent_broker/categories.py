"""The canonical categories and how free-form input folds onto them."""

from __future__ import annotations

import re

from agent_broker.problems import InvalidInput

CATEGORIES = (
    "data_processing",
    "research",
    "content_generation",
    "code_generation",
    "image_generation",
    "audio_processing",
    "video_processing",
    "translation",
    "summarisation",
    "classification",
    "extraction",
    "web_scraping",
    "api_integration",
    "data_analysis",
    "document_processing",
    "scheduling",
    "monitoring",
    "testing_qa",
    "security_audit",
    "custom_workflow",
    "free",
)
FREE = "free"

# Common ways agents name a category, already folded (lower case, words joined by "_").
SYNONYMS = {
    "data": "data_processing",
    "etl": "data_processing",
    "data_cleaning": "data_processing",
    "data_pipeline": "data_processing",
    "data_transformation": "data_processing",
    "research_assistant": "research",
    "deep_research": "research",
    "content": "content_generation",
    "writing": "content_generation",
    "copywriting": "content_generation",
    "text_generation": "content_generation",
    "content_creation": "content_generation",
    "blog_writing": "content_generation",
    "code": "code_generation",
    "coding": "code_generation",
    "code_gen": "code_generation",
    "codegen": "code_generation",
    "programming": "code_generation",
    "software_development": "code_generation",
    "code_writing": "code_generation",
    "image": "image_generation",
    "images": "image_generation",
    "image_gen": "image_generation",
    "text_to_image": "image_generation",
    "art_generation": "image_generation",
    "audio": "audio_processing",
    "speech": "audio_processing",
    "transcription": "audio_processing",
    "speech_to_text": "audio_processing",
    "text_to_speech": "audio_processing",
    "video": "video_processing",
    "video_editing": "video_processing",
    "translate": "translation",
    "translations": "translation",
    "localization": "translation",
    "localisation": "translation",
    "summarization": "summarisation",
    "summary": "summarisation",
    "summaries": "summarisation",
    "summarize": "summarisation",
    "summarise": "summarisation",
    "classify": "classification",
    "categorization": "classification",
    "categorisation": "classification",
    "labeling": "classification",
    "labelling": "classification",
    "tagging": "classification",
    "extract": "extraction",
    "data_extraction": "extraction",
    "information_extraction": "extraction",
    "parsing": "extraction",
    "webscraping": "web_scraping",
    "scraping": "web_scraping",
    "web_scraper": "web_scraping",
    "crawling": "web_scraping",
    "web_crawling": "web_scraping",
    "scraper": "web_scraping",
    "api": "api_integration",
    "apis": "api_integration",
    "api_calls": "api_integration",
    "api_call": "api_integration",
    "integration": "api_integration",
    "integrations": "api_integration",
    "api_integrations": "api_integration",
    "analysis": "data_analysis",
    "analytics": "data_analysis",
    "data_analytics": "data_analysis",
    "documents": "document_processing",
    "document": "document_processing",
    "pdf_processing": "document_processing",
    "ocr": "document_processing",
    "doc_processing": "document_processing",
    "schedule": "scheduling",
    "calendar": "scheduling",
    "booking": "scheduling",
    "monitor": "monitoring",
    "alerting": "monitoring",
    "uptime_monitoring": "monitoring",
    "qa": "testing_qa",
    "testing": "testing_qa",
    "qa_testing": "testing_qa",
    "test": "testing_qa",
    "tests": "testing_qa",
    "quality_assurance": "testing_qa",
    "test_automation": "testing_qa",
    "testing_and_qa": "testing_qa",
    "security": "security_audit",
    "audit": "security_audit",
    "pentest": "security_audit",
    "penetration_testing": "security_audit",
    "security_review": "security_audit",
    "workflow": "custom_workflow",
    "workflows": "custom_workflow",
    "automation": "custom_workflow",
    "custom": "custom_workflow",
    "other": "custom_workflow",
}
_SEPARATORS = re.compile(r"[\s\-_/.&+,]+")


def fold(value: str) -> str:
    return _SEPARATORS.sub("_", value.strip().lower()).strip("_")


def resolve(value: str) -> str | None:
    """The canonical category for free-form input, or None."""
    folded = fold(value)
    if folded in CATEGORIES:
        return folded
    return SYNONYMS.get(folded)


def resolve_or_refuse(value: str) -> str:
    category = resolve(value)
    if category is None:
        raise InvalidInput(f"Unknown category. Valid values: {', '.join(CATEGORIES)}.")
    return category


def for_listing(requested: str, price_micro: int) -> str:
    """A zero-price listing files under `free` whatever was asked; a priced one may not."""
    category = resolve_or_refuse(requested)
    if price_micro == 0:
        return FREE
    if category == FREE:
        raise InvalidInput(
            "Category free is only for zero-price listings; choose another category."
        )
    return category
