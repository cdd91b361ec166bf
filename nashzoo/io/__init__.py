"""Files: atomic writes, the file formats nashzoo writes and their validating readers.

The layer below the learners and the trainer (it knows games, nothing above them):

* :mod:`nashzoo.io.atomic`: atomic writes with temporary files beside their targets, the
  cleanup of the ones a killed process left, an output-folder lock, and pool workers that exit
  with their parent;
* :mod:`nashzoo.io.folder_kinds`: the three kinds of output folder (training run, race,
  tournament) and the refusal to mix them;
* :mod:`nashzoo.io.fields`: JSON reading (no ``NaN``) and field checks with one-line errors;
  the format tags and writer versions every file carries (:func:`check_format`);
* :mod:`nashzoo.io.policy_file`: the policy JSON format, written and read a chunk at a time;
* :mod:`nashzoo.io.checkpoint`: learner and trainer checkpoints, and the checks of learners'
  state arrays (:class:`ArraySpec`, :func:`check_arrays`).
"""

from nashzoo.io.atomic import (
    FileWriteError,
    FolderLockedError,
    OutputFolderError,
    atomic_file,
    atomic_write_bytes,
    check_output_folder,
    exit_with_parent,
    folder_lock,
    remove_stale_temp_files,
)
from nashzoo.io.checkpoint import (
    LEARNER_FORMAT,
    TRAINER_FORMAT,
    TRAINER_KEY,
    ArraySpec,
    CheckpointError,
    LearnerCheckpoint,
    TrainerCheckpoint,
    check_arrays,
    is_trainer_checkpoint,
    learner_checkpoint_bytes,
    read_learner_checkpoint,
    read_trainer_checkpoint,
    trainer_checkpoint_bytes,
    write_learner_checkpoint,
    write_trainer_checkpoint,
)
from nashzoo.io.fields import (
    FileFormatError,
    cause,
    check_format,
    newer_writer_note,
    parse_json,
    read_json,
    version_stamp,
)
from nashzoo.io.policy_file import (
    POLICY_FORMAT,
    PolicyFile,
    PolicyFileError,
    PolicyTable,
    read_policy_file,
    read_policy_table,
    write_policy_file,
)

__all__ = [
    "LEARNER_FORMAT",
    "POLICY_FORMAT",
    "TRAINER_FORMAT",
    "TRAINER_KEY",
    "ArraySpec",
    "CheckpointError",
    "FileFormatError",
    "FileWriteError",
    "FolderLockedError",
    "LearnerCheckpoint",
    "OutputFolderError",
    "PolicyFile",
    "PolicyFileError",
    "PolicyTable",
    "TrainerCheckpoint",
    "atomic_file",
    "atomic_write_bytes",
    "cause",
    "check_arrays",
    "check_format",
    "check_output_folder",
    "exit_with_parent",
    "folder_lock",
    "is_trainer_checkpoint",
    "learner_checkpoint_bytes",
    "newer_writer_note",
    "parse_json",
    "read_json",
    "read_learner_checkpoint",
    "read_policy_file",
    "read_policy_table",
    "read_trainer_checkpoint",
    "remove_stale_temp_files",
    "trainer_checkpoint_bytes",
    "version_stamp",
    "write_learner_checkpoint",
    "write_policy_file",
    "write_trainer_checkpoint",
]
