"""Job models share BackgroundJob (annotation.models): one state column width, the same
timestamps on every job, the upload fields on every job with a file. State values are unchanged
(a corpus keeps its own); a corpus's import gets started/finished times, an ended one's taken
from what it recorded."""
from django.db import migrations, models
from django.db.models import F


def corpus_times(apps, schema_editor):
    Corpus = apps.get_model("annotation", "Corpus")
    Corpus.objects.filter(imported_at__isnull=False).update(finished_at=F("imported_at"))
    # A failed import recorded its end only as its last sign of life.
    Corpus.objects.filter(state="failed", finished_at__isnull=True).update(finished_at=F("progress_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0012_jobs_progress_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='corpus',
            name='finished_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='corpus',
            name='started_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='evidencesearch',
            name='errors',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='evidencesearch',
            name='started_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='systemrun',
            name='file_size',
            field=models.BigIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name='corpus',
            name='file_name',
            field=models.CharField(blank=True, help_text='The name the file was uploaded under.', max_length=255),
        ),
        migrations.AlterField(
            model_name='evidencesearch',
            name='problems',
            field=models.JSONField(blank=True, default=list, help_text='What went wrong, as the page shows it (a web search that failed, say).'),
        ),
        migrations.AlterField(
            model_name='evidencesearch',
            name='state',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=12),
        ),
        migrations.AlterField(
            model_name='importjob',
            name='state',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=12),
        ),
        migrations.AlterField(
            model_name='systemrun',
            name='file_name',
            field=models.CharField(blank=True, help_text='The name the file was uploaded under.', max_length=255),
        ),
        migrations.AlterField(
            model_name='systemrun',
            name='state',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=12),
        ),
        migrations.RunPython(corpus_times, migrations.RunPython.noop),
    ]
